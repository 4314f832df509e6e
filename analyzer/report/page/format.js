// Number, time and name formatting, the colours shared by every view, and the registries the
// views put themselves in. The page's scripts are plain browser JavaScript without a build step;
// each file adds its part to the global `ST`. The list of scripts, in load order, is
// analyzer/report/CMakeLists.txt's `page_scripts`.
'use strict';
const ST = {};

// The page's views. A view file registers { id, order, mount(app) -> view }; the app mounts every
// registered view in `order` when the page starts and hands each one the new model on every live
// update (view.setModel(model), or the registration's update(view, model)). app[id] is the view.
ST.views = {
  list: [],
  register(spec) {
    this.list.push(spec);
    this.list.sort((a, b) => a.order - b.order);
  },
};

// The tabs of the table panel. A tab file registers { id, order, sort: [column, ascending],
// available(model), define(model, app) -> { label, rows, key(row), columns }, row(app, kind, row),
// select(app) }; a tab whose available(model) is false (its extension did not run) is not shown,
// and select(app), when given, runs when the tab's button is clicked.
//
// A file may also add a column to another file's tab: ST.tabs.addColumn({ tab, available(model),
// column(model) -> column }); the column is appended where available(model) holds (the fleet's
// Hosts column, fleet.js).
ST.tabs = {
  list: [],
  columns: [],
  register(spec) {
    this.list.push(spec);
    this.list.sort((a, b) => a.order - b.order);
  },
  addColumn(spec) { this.columns.push(spec); },
};

// What the page's time figures are, in their headers' tooltips: wall time and time summed over
// threads are different quantities, and a table that adds calls up says which it shows.
ST.labels = {
  wallTime: 'From the first event of the run to its last: the wall time. Times summed over threads can exceed it.',
  clusterTime: 'The durations of the cluster\'s calls added up over every thread: calls running at once on several threads add up, so this can exceed the run\'s wall time.',
  functionTime: 'Time inside the function, added up over threads, a recursive chain counted once: calls running at once on several threads add up, so this can exceed the run\'s wall time.',
  busiestThread: 'The same time on the one thread that spent the most in the function: a wall time, within the run\'s.',
};

ST.fmt = {
  // A duration in the largest unit that keeps it >= 1, three significant digits.
  ns(value) {
    const v = Number(value);
    if (!isFinite(v)) return '–';
    const a = Math.abs(v);
    if (a < 1e3) return `${Math.round(v)} ns`;
    if (a < 1e6) return `${ST.fmt.sig(v / 1e3)} µs`;
    if (a < 1e9) return `${ST.fmt.sig(v / 1e6)} ms`;
    return `${ST.fmt.sig(v / 1e9)} s`;
  },
  // An axis tick at `t` ns, with as many decimals as ticks `step` ns apart need to differ (at deep
  // zoom "5.000120 s", "5.000121 s", never "5.00 s" for every tick).
  tick(t, step) {
    const a = Math.abs(t);
    const unit = a < 1e3 ? 1 : a < 1e6 ? 1e3 : a < 1e9 ? 1e6 : 1e9;
    const name = { 1: 'ns', 1e3: 'µs', 1e6: 'ms', 1e9: 's' }[unit];
    const decimals = Math.max(0, Math.min(9, Math.ceil(-Math.log10(step / unit) - 1e-9)));
    return `${(t / unit).toFixed(decimals)} ${name}`;
  },
  // A mean as a person reads it: none for calls never measured (each closed by an outer exit),
  // "took X" for a single call, "mean X" otherwise; never "mean 0 ns" for what was not measured.
  meanOf(stats) {
    if (!stats || !stats.count) return 'not measured';
    return stats.count === 1 ? `took ${ST.fmt.ns(stats.mean_ns)}` : `mean ${ST.fmt.ns(stats.mean_ns)}`;
  },
  sig(v) {
    const a = Math.abs(v);
    return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
  },
  // Counts with thousands separators; large ones abbreviated when `short`.
  count(value, short) {
    const v = Number(value);
    if (!isFinite(v)) return '–';
    if (short && v >= 1e9) return `${ST.fmt.sig(v / 1e9)}G`;
    if (short && v >= 1e6) return `${ST.fmt.sig(v / 1e6)}M`;
    if (short && v >= 1e4) return `${ST.fmt.sig(v / 1e3)}k`;
    return v.toLocaleString('en-US');
  },
  // An embedded call's recorded arguments and return value (its fifth element: [position, text]
  // each, position 0 the return value; report_data.cpp), as uftrace replay writes them:
  // "arg2=4096 = -7"; '' when the recording holds none for the call.
  callValues(call) {
    const values = call?.[4];
    if (!values) return '';
    return values.map(([position, text]) => (position === 0 ? `= ${text}` : `arg${position}=${text}`)).join(' ');
  },
  html(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({
      '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;',
    })[c]);
  },
  // The name as labels show it (the full name is in every tooltip): without its parameters and
  // qualifiers, without its return type, and each template argument list longer than 16
  // characters, or with a template inside, written "<...>":
  // "void ns::Pool<std::allocator<void>>::run<int>(int) const" -> "ns::Pool<...>::run<int>".
  // A header-only library's instantiation names run to thousands of characters (Boost.Asio's),
  // and the parameters add nothing at the sizes labels are drawn at. The same rules as the text
  // outputs' shortFunctionName (analyzer/function_names.h), tested on the same examples
  // (tests/analyzer/short_function_names.tsv). A name the page's model registered (registerNames)
  // is kept unique: see there.
  shortName(full) {
    return ST.fmt.uniqueShortNames?.get(full) ?? ST.fmt.shortNameOf(full);
  },
  // The page's functions' short names kept unique, as the text outputs' ShortNames keeps them:
  // two different functions whose short names are the same (two lambdas' _M_run) get " #2",
  // " #3" in the order of their full names, the first keeping the plain short name.
  registerNames(fullNames) {
    const byShort = new Map();
    for (const full of new Set(fullNames)) {
      const short = ST.fmt.shortNameOf(full);
      if (!byShort.has(short)) byShort.set(short, []);
      byShort.get(short).push(full);
    }
    const unique = new Map();
    for (const [short, fulls] of byShort)
      fulls.sort().forEach((full, i) => unique.set(full, i === 0 ? short : `${short} #${i + 1}`));
    ST.fmt.uniqueShortNames = unique;
  },
  shortNameOf(full) {
    const name = ST.fmt.withoutParameters(full);
    const isWordChar = (c) => c !== undefined && /[A-Za-z0-9_]/.test(c);
    let out = '';
    let depth = 0; // inside (), [] or {}: "(anonymous namespace)", "{lambda(int)#1}"
    let afterOperator = false; // the operator's own name may hold spaces ("operator new")
    for (let i = 0; i < name.length;) {
      const c = name[i];
      if (depth === 0 && !afterOperator && name.startsWith('operator', i) &&
          !isWordChar(name[i - 1]) && !isWordChar(name[i + 8])) {
        afterOperator = true;
        out += 'operator';
        i += 8;
        const next = name.slice(i, i + 2);
        if (next === '()' || next === '[]') {
          out += next;
          i += 2;
        } else {
          while (i < name.length && '<>=!+-*/%^&|~,'.includes(name[i])) out += name[i++];
        }
        continue;
      }
      if ('([{'.includes(c)) ++depth;
      if (')]}'.includes(c) && depth > 0) --depth;
      if (depth === 0 && c === ' ' && !afterOperator) {
        out = ''; // what came before was the return type
        ++i;
        continue;
      }
      if (depth === 0 && c === '<') {
        let end = -1;
        for (let j = i, angles = 0; j < name.length; ++j) {
          if (name[j] === '<') ++angles;
          else if (name[j] === '>' && --angles === 0) { end = j + 1; break; }
        }
        if (end < 0) return out + name.slice(i); // not a name the demangler wrote: keep the rest
        const args = name.slice(i + 1, end - 1);
        out += args.length <= 16 && !args.includes('<') ? name.slice(i, end) : '<...>';
        i = end;
        continue;
      }
      out += c;
      ++i;
    }
    return out;
  },
  // "ns::Class::method(int, char const*) const" -> "ns::Class::method": from the '(' that matches
  // the name's last ')'.
  withoutParameters(name) {
    let depth = 0;
    for (let i = name.length - 1; i >= 0; --i) {
      const c = name[i];
      if (c === ')') ++depth;
      else if (c === '(' && --depth === 0 && i > 0) return name.slice(0, i);
    }
    return name;
  },
  // The last component of a qualified name, for the smallest labels.
  leafName(name) {
    const short = ST.fmt.shortName(name);
    const at = short.lastIndexOf('::');
    return at >= 0 ? short.slice(at + 2) : short;
  },
};

// Stable colours: derived from the function (not the cluster id), so a cluster keeps its colour
// while a live view re-clusters.
ST.color = {
  // Hues spread by the golden angle over the function's index (first appearance in the run), so
  // neighbouring functions get well-separated colours; `variant` (the cluster's rank among its
  // function's clusters) shifts lightness so clusters of one function stay apart. Hues 25-335
  // only: red is the outliers' colour.
  forFunction(index, variant = 0) {
    const hue = 25 + (index * 137.508) % 310;
    const light = 50 - (variant % 3) * 9 + (index % 2) * 4;
    return `hsl(${hue.toFixed(1)} 62% ${light}%)`;
  },
  outlier: '#d93025',
};
