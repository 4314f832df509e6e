// printCollectorSummary: one line per sender, a total, and the recording's state.
#include "cli/summary.h"

namespace shapetrace::cli {

namespace {

void printRejected(std::FILE* out, const collector::SenderCounters& c) {
  if (c.malformed + c.oversized + c.out_of_order + c.duplicate + c.missing_batches + c.unrecorded +
          c.refused ==
      0)
    return;
  std::fprintf(out,
               "    rejected: %llu malformed, %llu oversized, %llu out-of-order, %llu duplicate;"
               " %llu batches missing; %llu not recorded; %llu refused (limits)\n",
               (unsigned long long)c.malformed, (unsigned long long)c.oversized,
               (unsigned long long)c.out_of_order, (unsigned long long)c.duplicate,
               (unsigned long long)c.missing_batches, (unsigned long long)c.unrecorded,
               (unsigned long long)c.refused);
}

} // namespace

void printCollectorSummary(std::FILE* out, const collector::CollectorStats& stats,
                           const std::string& out_dir) {
  for (const auto& [process, c] : stats.senders) {
    std::fprintf(out, "  process %016llx pid %u %s: %llu messages, %llu events, %.1f MB%s\n",
                 (unsigned long long)process, c.pid,
                 c.executable.empty() ? "(no process start seen)" : c.executable.c_str(),
                 (unsigned long long)c.messages, (unsigned long long)c.events, static_cast<double>(c.bytes) / 1e6,
                 c.ended ? "" : " (no process end seen)");
    printRejected(out, c);
  }
  for (const auto& [peer, c] : stats.unattributed) {
    std::fprintf(out, "  unidentified sender %s:\n", peer.empty() ? "(unknown peer)" : peer.c_str());
    printRejected(out, c);
  }
  const collector::SenderCounters total = stats.total();
  std::fprintf(out, "shapetrace: %zu process(es), %llu messages, %llu events, %.1f MB received",
               stats.senders.size(), (unsigned long long)total.messages,
               (unsigned long long)total.events, static_cast<double>(total.bytes) / 1e6);
  if (!out_dir.empty())
    std::fprintf(out, "; %llu items recorded to %s", (unsigned long long)stats.recording.items_written,
                 out_dir.c_str());
  std::fprintf(out, "\n");
  if (stats.refused_processes)
    std::fprintf(out, "shapetrace: %llu messages of processes past the collector's process limit "
                      "refused\n", (unsigned long long)stats.refused_processes);
  const collector::LocalChannelCounters& channels = stats.channels;
  if (channels.refused + channels.broken > 0)
    std::fprintf(out, "shapetrace: local processes: %llu refused, %llu channel(s) closed for "
                      "breaking the ring's rules\n",
                 (unsigned long long)channels.refused, (unsigned long long)channels.broken);
  if (channels.rings_finished > 0)
    std::fprintf(out, "shapetrace: local processes: %llu ring(s) of processes that died without "
                      "warning finished by the collector\n",
                 (unsigned long long)channels.rings_finished);
  if (channels.rings_broken + channels.rings_refused > 0)
    std::fprintf(out, "shapetrace: local processes: %llu ring(s) left unfinished (lying indices or "
                      "past the bound), %llu process(es) whose rings could not be taken\n",
                 (unsigned long long)channels.rings_broken,
                 (unsigned long long)channels.rings_refused);
  if (stats.refused_clients > 0)
    std::fprintf(out, "shapetrace: %llu connection(s) refused: CURVE client key not in "
                      "--curve-clients\n",
                 (unsigned long long)stats.refused_clients);
  if (stats.foreign_messages > 0)
    std::fprintf(out, "shapetrace: %llu message(s) refused: they named a process another sender "
                      "sends\n",
                 (unsigned long long)stats.foreign_messages);
  if (stats.forwarded + stats.forward_dropped > 0)
    std::fprintf(out, "shapetrace: %llu messages forwarded, %llu NOT forwarded (the other "
                      "collector's queue was full)\n",
                 (unsigned long long)stats.forwarded, (unsigned long long)stats.forward_dropped);
  if (stats.not_published > 0)
    std::fprintf(out, "shapetrace: %llu of %llu items (%.1f MB) NOT published: the live "
                      "subscribers' queues held their bound (--publish-queue-mb); the subscribers "
                      "count them as missed\n",
                 (unsigned long long)stats.not_published, (unsigned long long)stats.published,
                 static_cast<double>(stats.not_published_bytes) / 1e6);
  if (!stats.recording_error.empty())
    std::fprintf(out, "shapetrace: recording stopped early: %s\n", stats.recording_error.c_str());
  const recording::RetentionStats& deleted = stats.recording.retention;
  if (deleted.segments > 0)
    std::fprintf(out, "shapetrace: retention deleted the %llu oldest segment(s) (%.1f MB, %llu "
                      "events in %llu batches); their processes, threads and a gap per thread are "
                      "kept (%s/%s)\n",
                 (unsigned long long)deleted.segments, static_cast<double>(deleted.bytes) / 1e6,
                 (unsigned long long)deleted.events, (unsigned long long)deleted.batches,
                 out_dir.c_str(), recording::kRetentionFile);
  if (!stats.recording.retention_error.empty())
    std::fprintf(out, "shapetrace: retention stopped: %s\n",
                 stats.recording.retention_error.c_str());
}

} // namespace shapetrace::cli
