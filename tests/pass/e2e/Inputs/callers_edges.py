"""Prints the callers extension's edges of a JSON model, or of a report page's embedded model,
one line each by caller and callee name, then checks that every function's inclusive time is its
exclusive time plus its measured callees' inclusive time."""
import json
import sys

text = open(sys.argv[1]).read()
if text.lstrip().startswith('<'):  # a report page: the model is in its data script
    start = text.index('id="shapetrace-data">') + len('id="shapetrace-data">')
    model = json.loads(text[start:text.index('</script>', start)])['model']
else:
    model = json.loads(text)
names = [f['name'] for f in model['functions']]
edges = model['extensions']['callers']['edges']
lines = []
for e in edges:
    caller = '(root)' if e['caller'] is None else names[e['caller']]
    lines.append(f"{caller} -> {names[e['callee']]}: {e['calls']} calls, {e['measured']} measured")
print('\n'.join(sorted(lines)))
# Per function: total over its callers = self over its callers + total of the edges it calls.
total, own, callees = {}, {}, {}
for e in edges:
    total[e['callee']] = total.get(e['callee'], 0) + e['total_ns']
    own[e['callee']] = own.get(e['callee'], 0) + e['self_ns']
    if e['caller'] is not None:
        callees[e['caller']] = callees.get(e['caller'], 0) + e['total_ns']
bad = [names[f] for f in total if total[f] != own[f] + callees.get(f, 0)]
print('times consistent' if not bad else f'inconsistent: {bad}')
