#!/usr/bin/python3
"""Reads Prometheus' text exposition format on stdin with the Prometheus project's own parser
(Debian's python3-prometheus-client) and prints its samples as JSON:
[{"family", "type", "name", "labels": {...}, "value"}]. A text the parser rejects exits 1 with its
error: what a Prometheus server would refuse to scrape."""
import json
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit("parse_metrics.py: python3-prometheus-client is not installed (scripts/setup installs it)")

try:
    samples = []
    for family in text_string_to_metric_families(sys.stdin.read()):
        for s in family.samples:
            samples.append({"family": family.name, "type": family.type, "name": s.name,
                            "labels": s.labels, "value": s.value})
except Exception as error:  # the parser's ValueError and friends: the text is not conforming
    sys.exit(f"parse_metrics.py: not the exposition format: {error}")
json.dump(samples, sys.stdout)
