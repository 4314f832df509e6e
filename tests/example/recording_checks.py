"""What the example's recording tests check alike (demo_recording_test.sh, late_attach_test.sh):
no thread dropped events, and the analysis met no unnamed id, unmatched exit, lost event or missing
process end. Each script adds its own checks and calls report()."""
import json

LOSS_STATS = ("function_ids_out_of_range", "unknown_function_ids", "processes_without_end",
              "unmatched_exits", "events_dropped")


def load(info_path, analysis_path):
    return json.load(open(info_path)), json.load(open(analysis_path))


def common_problems(info, analysis):
    problems = []
    for p in info["processes"]:
        for t in p["threads"]:
            if t["dropped"]:
                problems.append("thread %s dropped %d events" % (t["name"], t["dropped"]))
    counts = {d["name"]: d["count"] for d in analysis["diagnostics"]}
    for stat in LOSS_STATS:
        if counts.get(stat, 0):
            problems.append("%s: %d" % (stat, counts[stat]))
    return problems


def report(problems, success):
    """Prints the problems and exits 1, or prints `success`."""
    if problems:
        print("\n".join(problems))
        raise SystemExit(1)
    print(success)
