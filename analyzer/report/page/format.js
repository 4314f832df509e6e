// Number, time and name formatting, and the colours shared by every view. The page's scripts are
// plain browser JavaScript without a build step; each file adds its part to the global `ST`.
'use strict';
const ST = {};

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
  html(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({
      '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;',
    })[c]);
  },
  // "ns::Class::method(int, char const*)" -> "ns::Class::method": parameters add nothing at the
  // sizes labels are drawn at (the full name is in every tooltip).
  shortName(name) {
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

// Stable colours: derived from names (not ids), so a function or cluster keeps its colour across
// reports of the same program and while a live view re-clusters.
ST.color = {
  hash(text) {
    let h = 2166136261;
    for (let i = 0; i < text.length; ++i) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 16777619);
    }
    return h >>> 0;
  },
  // Hue from the name; `variant` (the cluster's rank among its function's clusters) shifts
  // lightness and hue a little so clusters of one function stay apart.
  forName(name, variant = 0) {
    const h = ST.color.hash(name);
    // Hues 25-335 only: red is the outliers' colour.
    const hue = 25 + (h % 310 + variant * 23) % 310;
    const sat = 55 + (h >>> 9) % 20;
    const light = 48 + ((h >>> 17) % 10) - (variant % 3) * 7;
    return `hsl(${hue} ${sat}% ${light}%)`;
  },
  outlier: '#d93025',
};
