// How a process that is not our child ended, read through a pidfd after its parent reaped it.
// waitid(P_PIDFD) and /proc/PID/stat cannot tell: only a parent may wait, and /proc forgets the
// process at the reap. Linux 6.15 keeps the wait status with the pidfd (PIDFD_GET_INFO with
// PIDFD_INFO_EXIT); Debian 12's headers predate it, so its ABI is spelled out here.
#pragma once

#include <cstdint>
#include <optional>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace shapetrace::collector {

// The kernel's struct pidfd_info, as of its first version (64 bytes; the kernel reads the size
// from the request number and accepts older ones).
struct PidfdInfo {
  uint64_t mask = 0;
  uint64_t cgroupid = 0;
  uint32_t pid = 0, tgid = 0, ppid = 0, ruid = 0, rgid = 0, euid = 0, egid = 0, suid = 0, sgid = 0,
           fsuid = 0, fsgid = 0;
  int32_t exit_code = 0;
};
static_assert(sizeof(PidfdInfo) == 64);
inline constexpr unsigned long kPidfdGetInfo = _IOWR(0xFF, 11, PidfdInfo);
inline constexpr uint64_t kPidfdInfoExit = uint64_t{1} << 3;

// A pidfd for `pid` (-1 when it is gone or the kernel has none: Linux before 5.3).
inline int openPidfd(uint32_t pid) {
  return int(::syscall(SYS_pidfd_open, pid, 0));
}

// The wait status of the process `pidfd` refers to, once it was reaped; nothing while it lives or
// is a zombie, or where the kernel does not keep it (before 6.15).
inline std::optional<int> reapedExitStatus(int pidfd) {
  if (pidfd < 0)
    return std::nullopt;
  PidfdInfo info;
  info.mask = kPidfdInfoExit;
  if (::ioctl(pidfd, kPidfdGetInfo, &info) != 0 || !(info.mask & kPidfdInfoExit))
    return std::nullopt;
  return info.exit_code;
}

} // namespace shapetrace::collector
