// Where a runtime finds its collector when SHAPETRACE_ENDPOINT is not set, and where the collector
// listens by default: an ipc:// socket in a directory only the user can open.
//
//   $XDG_RUNTIME_DIR/shapetrace/collector.sock   when XDG_RUNTIME_DIR is set (it is 0700 already)
//   /tmp/shapetrace-<uid>/collector.sock         otherwise (the collector creates it 0700)
#pragma once

#include <string>

namespace shapetrace::wire {

// The directory holding the default socket (not created here).
std::string defaultEndpointDirectory();
// "ipc://" + defaultEndpointDirectory() + "/collector.sock".
std::string defaultEndpoint();

// Makes sure `dir` is a directory only this user can enter, creating it (mode 0700) when missing:
// the collector before it listens there, the runtime before it connects there (so that another
// user cannot put a socket of theirs in our place). Returns what is wrong, empty when nothing is: a
// symlink or not a directory, another owner, access for group or others.
std::string claimPrivateDirectory(const std::string& dir);

} // namespace shapetrace::wire
