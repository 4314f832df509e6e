// The flame graph and the funky graph of 003 ("Visualisations for Function Time Profiles") over the
// "flame" extension's exact calling-context tree (analyzer/extensions/flame.h), drawn on canvas.
//
// Gold-plated flame graph (003, section 4): siblings sorted by weight, heaviest first; each frame
// coloured by its function's weight relative to the zoom root, min(w_function / w_zoomRoot, 1),
// on the CIE Lab b axis at constant luminosity (blue light, yellow heavy); frames outlined in the
// background colour; hovering a frame outlines every frame of that function in magenta (the Lab a
// axis, orthogonal to b) with a heavier font; a regular expression search shows the matched share;
// click zooms, the breadcrumb goes back; recursion folding (direct or indirect) and an inverted
// (icicle) layout as options. Frames narrower than a pixel are merged into one frame drawn once,
// so the cost of a redraw follows the visible frames, not the tree's size.
//
// Funky graph (003, section 5) for one function F, from where F actually ran: its frames without
// a frame of F above them (recursion counted once per stack, as the flame graph's colour and the
// Functions table count it); F's callees above it (yellow), merged over those frames and then fully
// folded (every repeat of a function folded into its top-most frame), and its callers below
// (blue), each frame's fully folded stack reversed and weighted by the frame's inclusive weight.
// Clicking a frame in either graph centres the funky graph on it.
'use strict';

ST.flame = {
  data(model) { return model.data.model.extensions?.flame ?? null; },

  // A tree of columns: parent, fn, calls, self, total (inclusive as recorded) and, after
  // finish(), weight (max(total, sum of children's weights): an open caller such as a main still
  // running has no time of its own but its children's) and children sorted heaviest first.
  fromExtension(ext, thread) {
    const n = ext.nodes.parent.length;
    const t = { parent: Int32Array.from(ext.nodes.parent), fn: Int32Array.from(ext.nodes.function),
      calls: new Float64Array(n), self: new Float64Array(n), total: new Float64Array(n) };
    if (thread === undefined) {
      t.calls.set(ext.nodes.calls); t.self.set(ext.nodes.self_ns); t.total.set(ext.nodes.total_ns);
    } else {
      thread.nodes.forEach((id, i) => {
        t.calls[id] += thread.calls[i]; t.self[id] += thread.self_ns[i]; t.total[id] += thread.total_ns[i];
      });
    }
    return ST.flame.finish(t);
  },

  // The tree of the calls that ended in [from, to), from the extension's time slices (the slices
  // that overlap the range: trees add up exactly, slice by slice). Also the range it covers.
  fromSlices(ext, from, to) {
    const sl = ext.slices, n = ext.nodes.parent.length;
    const t = { parent: Int32Array.from(ext.nodes.parent), fn: Int32Array.from(ext.nodes.function),
      calls: new Float64Array(n), self: new Float64Array(n), total: new Float64Array(n) };
    let first = Infinity, last = -Infinity, used = 0;
    for (const s of sl.slices) {
      const end = s.start_ns + sl.width_ns;
      if (end <= from || s.start_ns >= to) continue;
      first = Math.min(first, s.start_ns); last = Math.max(last, end); ++used;
      s.nodes.forEach((id, i) => { t.calls[id] += s.calls[i]; t.self[id] += s.self_ns[i]; t.total[id] += s.total_ns[i]; });
    }
    for (let i = 1; i < n; ++i) if (t.parent[i] === 0) { t.calls[0] += t.calls[i]; t.total[0] += t.total[i]; }
    return { tree: ST.flame.finish(t), from: first, to: last, slices: used };
  },

  // The tree of one embedded call (calls: [function, depth, start, end, values?], in entry order).
  // A frame that stands for exactly one call is that exact call: values[node] holds its recorded
  // arguments and return value for the tooltip ('' when it has none, or stands for several calls).
  fromInstance(inst) {
    const parent = [-1], fn = [-1], calls = [0], self = [0], total = [0];
    const key = new Map(), open = [], node = [], childNs = [];
    inst.calls.forEach(([f, depth, start, end], i) => {
      open.length = depth;
      const p = depth === 0 ? 0 : node[open[depth - 1]];
      const k = `${p}:${f}`;
      let id = key.get(k);
      if (id === undefined) { id = parent.length; parent.push(p); fn.push(f); calls.push(0); self.push(0); total.push(0); key.set(k, id); }
      node[i] = id; childNs[i] = 0; open.push(i);
      calls[id] += 1; total[id] += end - start;
      if (depth > 0) childNs[open[depth - 1]] += end - start;
    });
    inst.calls.forEach(([, , start, end], i) => { self[node[i]] += Math.max(0, end - start - childNs[i]); });
    const values = parent.map(() => '');
    inst.calls.forEach((call, i) => { if (calls[node[i]] === 1) values[node[i]] = ST.fmt.callValues(call); });
    return ST.flame.finish({ parent: Int32Array.from(parent), fn: Int32Array.from(fn), calls: Float64Array.from(calls),
      self: Float64Array.from(self), total: Float64Array.from(total), values });
  },

  finish(t) {
    const n = t.parent.length;
    t.weight = new Float64Array(n);
    const below = new Float64Array(n);
    for (let i = n - 1; i > 0; --i) {
      t.weight[i] = Math.max(t.total[i], below[i]);
      below[t.parent[i]] += t.weight[i];
    }
    t.weight[0] = below[0];
    t.children = Array.from({ length: n }, () => []);
    for (let i = 1; i < n; ++i) if (t.weight[i] > 0) t.children[t.parent[i]].push(i);
    for (const c of t.children) c.sort((a, b) => t.weight[b] - t.weight[a]);
    return t;
  },

  // Recursion folding, as flame_tree.cpp's FlameTree::folded: 'direct' folds a frame into a parent
  // of the same function, 'indirect' into the top-most frame of its function on the stack. Self
  // time and calls add up; the weight is the self time below.
  fold(t, mode) {
    if (mode === 'none') return t;
    const n = t.parent.length;
    const parent = [-1], fn = [-1], calls = [0], self = [0], values = [];
    const childIndex = new Map();
    const image = new Int32Array(n);
    for (let i = 1; i < n; ++i) {
      const p = image[t.parent[i]], f = t.fn[i];
      let target = -1;
      if (mode === 'direct') {
        if (p !== 0 && fn[p] === f) target = p;
      } else {
        for (let a = p; a !== 0; a = parent[a]) if (fn[a] === f) { target = a; break; }
      }
      if (target < 0) {
        const key = `${p}:${f}`;
        target = childIndex.get(key);
        if (target === undefined) {
          target = parent.length;
          parent.push(p); fn.push(f); calls.push(0); self.push(0);
          childIndex.set(key, target);
        }
      }
      image[i] = target;
      calls[target] += t.calls[i];
      self[target] += t.self[i];
      if (t.values && t.calls[i] === 1) values[target] = t.values[i];
    }
    const m = parent.length;
    const total = new Float64Array(m);
    for (let i = m - 1; i > 0; --i) { total[i] += self[i]; total[parent[i]] += total[i]; }
    // An exact call's values stay on a frame that still stands for that one call only.
    const exact = t.values ? Array.from({ length: m }, (_, i) => (calls[i] === 1 ? values[i] ?? '' : '')) : undefined;
    // image: each node of t -> its node here (the funky graph finds a frame's folded stack).
    return Object.assign(ST.flame.finish({ parent: Int32Array.from(parent), fn: Int32Array.from(fn),
      calls: Float64Array.from(calls), self: Float64Array.from(self), total, values: exact }), { image });
  },

  // The funky graph's two trees for F (003, section 5), from the unfolded tree t and its full fold
  // (fold(t, 'indirect')). F's frames are where it actually ran: its frames in t without a frame of
  // F above them, as functionWeights counts them (recursion once per stack). Folding the tree
  // first would lose them: in a(b(a(c))), b's child a folds into the outer a and b keeps only its
  // self time. Callees (up): those frames' subtrees merged into one root, then fully folded (a
  // nested frame of F folds into the root: its callees are F's). Callers (down): each frame's stack
  // in the full fold, reversed (no function twice: the paper folds the callers too), weighted by
  // the frame's inclusive weight. Numeric keys and explicit stacks: F may be main, whose subtree is
  // the whole tree, and a stack can be 65536 calls deep.
  funky(t, full, F) {
    ST.flame.index(t);
    const frames = [];
    for (let i = 1; i < t.parent.length; ++i) if (t.fn[i] === F && t.weight[i] > 0 && t.same[i] < 0) frames.push(i);
    const key = new Map();
    const add = (tree, p, f) => {
      const k = p * 16777216 + f; // function indices stay below 2^24, nodes below 2^29
      let id = key.get(k);
      if (id === undefined) { id = tree.parent.length; tree.parent.push(p); tree.fn.push(f); tree.calls.push(0); tree.self.push(0); tree.total.push(0); key.set(k, id); }
      return id;
    };
    const columns = (x) => ({ parent: Int32Array.from(x.parent), fn: Int32Array.from(x.fn), calls: Float64Array.from(x.calls), self: Float64Array.from(x.self), total: Float64Array.from(x.total) });
    // The frames have no frame of F above them: their subtrees are disjoint, each copied once.
    // A frame's weight is the self time under it, as the folded callees count it.
    const up = { parent: [-1, 0], fn: [-1, F], calls: [0, 0], self: [0, 0], total: [0, 0] };
    const weight = frames.map((frame) => {
      let w = 0;
      const nodes = [frame], into = [1];
      while (nodes.length) {
        const i = nodes.pop(), at = into.pop();
        up.calls[at] += t.calls[i]; up.self[at] += t.self[i]; w += t.self[i];
        for (const c of t.children[i]) { nodes.push(c); into.push(add(up, at, t.fn[c])); }
      }
      return w;
    });
    const down = { parent: [-1, 0], fn: [-1, F], calls: [0, 0], self: [0, 0], total: [0, 0] };
    key.clear();
    frames.forEach((i, n) => {
      const w = weight[n];
      down.total[1] += w; down.calls[1] += t.calls[i]; down.self[1] += t.self[i];
      let at = 1;
      for (let a = full.parent[full.image[i]]; a > 0; a = full.parent[a]) { at = add(down, at, full.fn[a]); down.total[at] += w; }
    });
    return { up: ST.flame.fold(ST.flame.finish(columns(up)), 'indirect'), down: ST.flame.finish(columns(down)) };
  },

  // Per tree, once: its nodes in depth-first order (the drawn ones: weight > 0), each node's place
  // in that order and the end of its subtree there, and its nearest ancestor of the same function
  // (-1: none). A zoom root's subtree is then one stretch of the order, which functionWeights
  // reads straight through. Iterative: a stack can be 65536 calls deep.
  index(t) {
    if (t.order) return;
    const n = t.fn.length;
    let functions = 0;
    for (let i = 0; i < n; ++i) if (t.fn[i] >= functions) functions = t.fn[i] + 1;
    const order = new Int32Array(n), pre = new Int32Array(n), end = new Int32Array(n);
    const same = new Int32Array(n).fill(-1), saved = new Int32Array(n);
    const nearest = new Int32Array(functions).fill(-1); // per function, on the current path
    const stack = new Int32Array(2 * n + 2); // i to enter node i, ~i to leave it
    let top = 0, k = 0;
    stack[top++] = 0;
    while (top > 0) {
      const e = stack[--top];
      if (e < 0) {
        const i = ~e, f = t.fn[i];
        if (f >= 0) nearest[f] = saved[i];
        end[i] = k;
        continue;
      }
      const f = t.fn[e];
      if (f >= 0) { same[e] = nearest[f]; saved[e] = nearest[f]; nearest[f] = e; }
      pre[e] = k; order[k++] = e;
      stack[top++] = ~e;
      const c = t.children[e];
      for (let j = c.length - 1; j >= 0; --j) stack[top++] = c[j];
    }
    Object.assign(t, { order, pre, end, same, functions });
  },

  // Per function: its weight under `root` (its frames without a frame of the same function above
  // them, up to root), for the colour. One pass over the root's stretch of the depth-first order:
  // a frame counts unless its nearest same-function ancestor is inside the stretch.
  functionWeights(t, root) {
    ST.flame.index(t);
    const sum = new Float64Array(t.functions);
    const from = t.pre[root], to = t.end[root];
    for (let k = from; k < to; ++k) {
      const i = t.order[k], f = t.fn[i];
      if (f < 0) continue;
      const a = t.same[i];
      if (a < 0 || t.pre[a] < from || t.pre[a] >= to) sum[f] += t.weight[i];
    }
    const w = new Map();
    for (let f = 0; f < t.functions; ++f) if (sum[f] > 0) w.set(f, sum[f]);
    return w;
  },

  // CIE Lab (L, a = 0, b) to an sRGB colour: the paper's constant-luminosity yellow-blue axis.
  lab(L, b) {
    const fy = (L + 16) / 116, fx = fy, fz = fy - b / 200;
    const inv = (t) => (t ** 3 > 0.008856 ? t ** 3 : (t - 16 / 116) / 7.787);
    const X = 0.95047 * inv(fx), Y = inv(fy), Z = 1.08883 * inv(fz);
    const lin = [3.2406 * X - 1.5372 * Y - 0.4986 * Z, -0.9689 * X + 1.8758 * Y + 0.0415 * Z,
      0.0557 * X - 0.204 * Y + 1.057 * Z];
    const c = lin.map((v) => Math.round(255 * Math.min(1, Math.max(0, v <= 0.0031308 ? 12.92 * v : 1.055 * v ** (1 / 2.4) - 0.055))));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  },
  // Weight share 0 -> blue (b = -32), 1 -> yellow (b = +48), at L = 82.
  colour(share) { return ST.flame.lab(82, -32 + 80 * Math.min(1, Math.max(0, share))); },
};

// One canvas graph (a flame graph, or one half of the funky graph) over a finished tree.
ST.FlameCanvas = class {
  constructor(canvas, view, opts) {
    // opts: { up, rowHeight, hue(share) -> colour, or fill(rect) -> colour for a colour per frame }
    this.canvas = canvas; this.view = view; this.opts = opts;
    this.rects = [];
    canvas.addEventListener('mousemove', (e) => this.view.hover(this.hit(e), e));
    canvas.addEventListener('mouseleave', () => this.view.hover(null));
    canvas.addEventListener('click', (e) => { const h = this.hit(e); if (h) this.view.click(h, this); });
  }
  hit(e) {
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    for (const rect of this.rects) if (x >= rect.x && x < rect.x + rect.w && y >= rect.y && y < rect.y + rect.h) return rect;
    return null;
  }
  // Lays out and draws `tree` from `root`, with `ancestors` (root's stack, drawn full width) first.
  draw(tree, root, ancestors, state) {
    const started = performance.now();
    const c = this.canvas, H = this.opts.rowHeight;
    const width = c.parentElement.clientWidth || 800;
    const rects = [];
    const total = tree.weight[root] || 1;
    const visit = (i, x, depth) => {
      const w = (tree.weight[i] / total) * width;
      rects.push({ node: i, fn: tree.fn[i], x, w, depth, tree });
      let cx = x;
      let merged = 0, mergedX = 0;
      for (const ch of tree.children[i]) {
        const cw = (tree.weight[ch] / total) * width;
        if (cw < 1) { if (!merged) mergedX = cx; merged += cw; cx += cw; continue; }
        visit(ch, cx, depth + 1);
        cx += cw;
      }
      if (merged >= 0.5) rects.push({ node: -1, fn: -2, x: mergedX, w: merged, depth: depth + 1, tree });
    };
    ancestors.forEach((a, d) => rects.push({ node: a, fn: tree.fn[a], x: 0, w: width, depth: d, tree, faded: true }));
    if (!this.opts.skipRoot && (root !== 0 || tree.fn[root] >= 0)) visit(root, 0, ancestors.length);
    else { let x = 0; for (const ch of tree.children[root]) { const w = (tree.weight[ch] / total) * width; if (w >= 1) visit(ch, x, 0); x += w; } }
    const depth = rects.reduce((m, r) => Math.max(m, r.depth), 0) + 1;
    const dpr = window.devicePixelRatio || 1;
    c.style.width = `${width}px`; c.style.height = `${depth * H}px`;
    c.width = Math.round(width * dpr); c.height = Math.round(depth * H * dpr);
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, depth * H);
    g.font = '11px sans-serif';
    for (const r of rects) {
      r.y = this.opts.up ? (depth - 1 - r.depth) * H : r.depth * H;
      r.h = H;
      const fw = r.fn >= 0 ? (state.weights.get(r.fn) || 0) / (state.rootWeight || 1) : 0;
      g.globalAlpha = r.faded ? 0.45 : 1;
      g.fillStyle = r.fn === -2 ? '#ccc' : this.opts.fill ? this.opts.fill(r)
        : state.match && state.match(r.fn) ? '#b58ae0' : this.opts.hue(fw);
      g.fillRect(r.x, r.y, r.w, H);
      g.strokeStyle = '#fff'; g.lineWidth = 1; // outlined in the background colour
      g.strokeRect(r.x + 0.5, r.y + 0.5, Math.max(0, r.w - 1), H - 1);
      const hot = state.hoverFn !== null && r.fn === state.hoverFn;
      if (hot) { g.strokeStyle = '#e0119d'; g.lineWidth = 3; g.strokeRect(r.x + 1.5, r.y + 1.5, Math.max(0, r.w - 3), H - 3); }
      if (r.w > 30 && r.fn !== -2) {
        g.fillStyle = '#222'; g.font = hot ? 'bold 11px sans-serif' : '11px sans-serif';
        const label = ST.fmt.shortName(this.view.name(r.fn));
        const fit = Math.floor((r.w - 6) / 6.5);
        g.fillText(label.length > fit ? `${label.slice(0, Math.max(0, fit - 1))}…` : label, r.x + 3, r.y + H - 5);
      }
    }
    g.globalAlpha = 1;
    this.rects = rects;
    this.lastDrawMs = performance.now() - started;
    this.canvas.dataset.frames = String(rects.length);
    return rects;
  }
};

ST.FlameView = class {
  constructor(app) {
    this.app = app;
    this.section = document.createElement('section');
    this.section.className = 'panel flame-panel';
    this.section.id = 'flame-panel';
    this.section.innerHTML = `
      <div class="panel-title">Flame graph <span class="flame-hint">exact time of every call · hover: every frame of the function · click: zoom and centre the funky graph</span></div>
      <div class="toolbar flame-toolbar">
        <select id="flame-scope" title="Scope"></select>
        <select id="flame-function" title="The function whose outlier or typical calls are shown" hidden></select>
        <select id="flame-fold" title="Recursion folding (003)"><option value="none">no folding</option><option value="direct">fold direct recursion</option><option value="indirect">fold all recursion</option></select>
        <label><input type="checkbox" id="flame-inverted"> icicle</label>
        <input type="search" id="flame-search" placeholder="search (regular expression)">
        <span id="flame-matched"></span>
        <span id="flame-scope-label" class="flame-hint"></span>
        <span id="flame-crumbs" class="flame-crumbs"></span>
      </div>
      <div class="flame-body">
        <div class="flame-main"><canvas id="flame-canvas"></canvas></div>
        <div class="funky"><div class="panel-title" id="funky-title">Funky graph</div>
          <div><canvas id="funky-callees"></canvas></div><div><canvas id="funky-callers"></canvas></div></div>
      </div>`;
    const tables = document.querySelector('section.tables');
    document.body.querySelector('main')?.parentNode.insertBefore(this.section, tables?.closest('section') ?? null);
    const $ = (id) => this.section.querySelector(`#${id}`);
    this.flame = new ST.FlameCanvas($('flame-canvas'), this, { up: true, rowHeight: 18, hue: ST.flame.colour });
    this.callees = new ST.FlameCanvas($('funky-callees'), this, { up: true, rowHeight: 18, hue: (s) => ST.flame.lab(86, 10 + 50 * s) });
    // The callers half starts below the function's frame, which the callees half draws.
    this.callers = new ST.FlameCanvas($('funky-callers'), this, { up: false, skipRoot: true, rowHeight: 18, hue: (s) => ST.flame.lab(80, -10 - 40 * s) });
    this.state = { hoverFn: null, match: null, weights: new Map(), rootWeight: 1 };
    // A scope read from the recording is taken as it is when chosen (the visible range, the
    // cluster shown): live updates do not read it again.
    $('flame-scope').addEventListener('change', () => { this.recordedParams = null; this.clusterShown = null; this.shapeShown = null; this.rebuild(); });
    $('flame-function').addEventListener('change', () => this.rebuild());
    $('flame-fold').addEventListener('change', () => this.rebuild());
    $('flame-inverted').addEventListener('change', () => { this.flame.opts.up = !$('flame-inverted').checked; this.draw(); });
    $('flame-search').addEventListener('input', () => this.search($('flame-search').value));
    this.$ = $;
    this.setModel(app.model);
  }

  name(fn) { return fn < 0 ? '(all)' : this.model.functionName(fn); }

  setModel(model) {
    this.model = model;
    this.ext = ST.flame.data(model);
    this.section.hidden = !this.ext;
    if (!this.ext) return;
    const scope = this.$('flame-scope');
    const selected = scope.value;
    // Live with the collector's recording: scopes the server reads from it (GET /api/flame).
    const fromRecording = model.data.live?.flame
      ? '<option value="window">the timeline\'s visible range (recording)</option>' +
        '<option value="cluster">the cluster in the side panel (recording)</option>' : '';
    // The report's scopes: time slices of the extension, and the trees `shapetrace report` read
    // back for the clusters with the most time and the functions with the most outliers.
    this.scopes = model.data.flame_scopes ?? null;
    const outlierFns = this.scopes?.functions ?? [];
    const embedded = (this.ext.slices ? '<option value="range">the timeline\'s visible range</option>' : '') +
      (this.scopes && !fromRecording ? '<option value="cluster">the cluster in the side panel</option>' : '') +
      (this.scopes?.shapes?.length ? '<option value="shape">a shape of that cluster (its flame graph button)</option>' : '') +
      (outlierFns.length ? '<option value="outliers">outlier calls of a function</option><option value="typical">typical calls of that function</option>' : '') +
      (model.instances?.length || model.data.live?.instances ? '<option value="instance">the call opened below</option>' : '');
    scope.innerHTML = '<option value="all">all threads</option>' + this.ext.threads.map((t, i) =>
      `<option value="${i}">${ST.fmt.html(model.threadByKey?.get(model.key(t.process, t.thread))?.label ?? `thread ${t.thread}`)}</option>`).join('') + embedded + fromRecording;
    const fnSelect = this.$('flame-function'), fnSelected = fnSelect.value;
    fnSelect.innerHTML = outlierFns.map((e) => `<option value="${e.function}">${ST.fmt.html(ST.fmt.shortName(model.functionName(e.function)))} (${e.outliers.kept} outliers)</option>`).join('');
    if (fnSelected) fnSelect.value = fnSelected;
    if (selected) scope.value = selected;
    this.rebuild();
  }

  // The flame graph of one cluster's calls (and everything under them): read from the recording
  // live, embedded in a report.
  showCluster(id) {
    this.$('flame-scope').value = 'cluster';
    this.recordedParams = { cluster: id };
    this.clusterShown = id;
    this.rebuild();
    this.section.scrollIntoView({ block: 'nearest' });
  }

  // The flame graph of one shape's calls (a shape's button in the side panel).
  showShape(id) {
    this.$('flame-scope').value = 'shape';
    this.shapeShown = id;
    this.rebuild();
    this.section.scrollIntoView({ block: 'nearest' });
  }

  // Whether the page has a flame graph for this cluster's calls.
  hasCluster(id) {
    return Boolean(this.model.data.live?.flame) || Boolean(this.scopes?.clusters.some((c) => c.cluster === id));
  }

  // The outlier calls of a function (or its typical calls), when the report embeds them.
  hasOutliers(fn) { return Boolean(this.scopes?.functions.some((e) => e.function === fn)); }
  showOutliers(fn, which = 'outliers') {
    this.$('flame-scope').value = which;
    this.$('flame-function').value = String(fn);
    this.rebuild();
    this.section.scrollIntoView({ block: 'nearest' });
  }

  // The timeline moved: a range scope follows it (once it settles).
  onRange() {
    if (this.$('flame-scope').value !== 'range') return;
    clearTimeout(this.rangeTimer);
    this.rangeTimer = setTimeout(() => this.rebuild(), 120);
  }

  // The flame graph of one call (the instance view's button).
  showInstance(inst) {
    this.instance = inst;
    this.$('flame-scope').value = 'instance';
    this.rebuild();
    this.section.scrollIntoView({ block: 'nearest' });
  }

  // A call was opened in the instance view: the 'instance' scope shows it.
  onInstance(inst) {
    this.instance = inst;
    if (this.$('flame-scope').value === 'instance') this.rebuild();
  }

  // The tree of an embedded scope and the words that say what it holds (and what it lacks).
  embeddedScope(scope) {
    const f = ST.fmt, m = this.model, sc = this.scopes;
    const coverage = () => (sc.complete ? '' : ` — the report read ${(100 * sc.events_read / sc.events).toFixed(1)}% of the events (each thread from its start, --flame-scope-events), so this holds the calls of the run's first part`);
    if (scope === 'range') {
      const v = this.app.timeline.view;
      const r = ST.flame.fromSlices(this.ext, v.start, v.end);
      const sl = this.ext.slices;
      const label = r.slices === 0 ? 'no call ended in the visible range'
        : `calls that ended in ${f.ns(r.from - m.t0)} – ${f.ns(r.to - m.t0)} (the visible range rounded out to ${r.slices} slices of ${f.ns(sl.width_ns)})` +
          (sl.widened_for_size ? ` — slices widened ${sl.widened_for_size}× to bound the page` : '');
      return { tree: r.tree, label, capped: sl.widened_for_size > 0 };
    }
    if (scope === 'cluster') {
      const id = this.clusterShown ?? this.app.clusterPanel?.shown ?? null;
      const e = sc.clusters.find((c) => c.cluster === id);
      if (!e) return { tree: null, label: `cluster #${id} is not among the ${sc.clusters.length} clusters with the most time whose flame graphs the report embeds (--flame-scope-clusters)`, capped: true };
      if (!e.nodes) return { tree: null, label: `cluster #${id}: its flame graph was left out to bound the page (the report embeds at most ${f.count(sc.max_total_nodes)} nodes of scoped flame graphs)`, capped: true };
      const seen = e.roots + e.nested;
      const capped = !sc.complete || seen < e.calls || sc.truncated_calls > 0 || sc.missed_calls > 0;
      return { tree: ST.flame.fromExtension({ nodes: e.nodes }), capped,
        label: `cluster #${id} (${f.shortName(m.functionName(m.clusters[id]?.function))}): ${f.count(e.roots)} calls and everything under them` +
          (seen < e.calls ? ` (${f.count(seen)} of its ${f.count(e.calls)} calls)` : '') + coverage() + this.bounds() };
    }
    if (scope === 'shape') {
      const id = this.shapeShown ?? m.clusters[this.app.clusterPanel?.shown]?.shapes[0] ?? null;
      const e = sc.shapes.find((x) => x.shape === id);
      if (!e) return { tree: null, label: `shape #${id} is not among the shapes of the clusters whose flame graphs the report embeds (--flame-scope-clusters, --flame-scope-shapes)`, capped: true };
      if (!e.nodes) return { tree: null, label: `shape #${id}: its flame graph was left out to bound the page (the report embeds at most ${f.count(sc.max_total_nodes)} nodes of scoped flame graphs)`, capped: true };
      return { tree: ST.flame.fromExtension({ nodes: e.nodes }), capped: !sc.complete || e.roots < e.calls || sc.truncated_calls > 0 || sc.missed_calls > 0,
        label: `shape #${id} of cluster #${e.cluster} (${f.shortName(m.functionName(m.clusters[e.cluster]?.function))}): ${f.count(e.roots)} calls and everything under them` +
          (e.roots < e.calls ? ` (of its ${f.count(e.calls)} calls)` : '') + coverage() + this.bounds() };
    }
    if (scope === 'outliers' || scope === 'typical') {
      const fn = Number(this.$('flame-function').value);
      const e = sc.functions.find((x) => x.function === fn) ?? sc.functions[0];
      const part = scope === 'outliers' ? e.outliers : e.typical;
      const name = f.shortName(m.functionName(e.function));
      if (!part.nodes) return { tree: null, label: `the ${scope} calls of ${name}: their flame graph was left out to bound the page (the report embeds at most ${f.count(sc.max_total_nodes)} nodes of scoped flame graphs)`, capped: true };
      const tree = ST.flame.fromExtension({ nodes: part.nodes });
      const mean = (p) => (p.roots && p.nodes ? ` (mean ${f.ns(ST.flame.fromExtension({ nodes: p.nodes }).weight[0] / p.roots)})` : '');
      const label = scope === 'outliers'
        ? `${f.count(part.roots)} outlier calls of ${name}${part.roots < part.kept ? ` (of the ${f.count(part.kept)} the analysis kept)` : ''}${mean(part)} against ${f.count(e.typical.roots)} typical calls${mean(e.typical)}`
        : `${f.count(part.roots)} typical calls of ${name}${mean(part)} against ${f.count(e.outliers.roots)} outlier calls${mean(e.outliers)}`;
      return { tree, label: label + coverage() + this.bounds(), capped: !sc.complete || part.roots < (part.kept ?? 0) };
    }
    // 'instance'
    const inst = this.instance;
    if (!inst) return { tree: null, label: 'open a call (click an occurrence or an outlier on the timeline)', capped: false };
    return { tree: ST.flame.fromInstance(inst), capped: inst.omitted_calls > 0,
      label: `one call of ${f.shortName(m.functionName(inst.function))} (${inst.reason}) at ${f.ns(inst.start_ns - m.t0)}` +
        (inst.omitted_calls ? ` — ${f.count(inst.omitted_calls)} of its calls are not embedded (--max-instance-calls)` : '') };
  }

  bounds() {
    const sc = this.scopes, f = ST.fmt;
    return (sc.truncated_calls ? ` — ${f.count(sc.truncated_calls)} calls past ${f.count(sc.max_nodes)} stacks per graph left out (--flame-scope-nodes)` : '') +
      (sc.missed_calls ? ` — ${f.count(sc.missed_calls)} calls nested past ${sc.max_nested} open scopes not counted` : '');
  }

  // The tree of a scope read from the recording by the live server; null until it has arrived
  // (the request starts here, and rebuild() runs again when it answers).
  recorded(scope) {
    const m = this.model, view = this.app.timeline?.view;
    if (!this.recordedParams)
      this.recordedParams = scope === 'window'
        ? { from_ns: Math.floor(view.start), to_ns: Math.ceil(view.end) }
        : { cluster: this.app.clusterPanel?.shown ?? 0 };
    const params = this.recordedParams;
    const key = `${scope}:${JSON.stringify(params)}`;
    if (this.fetched?.key === key) return this.fetched.ext;
    if (this.fetching !== key) {
      this.fetching = key;
      fetch(`${m.data.live.flame}?${new URLSearchParams(params)}`, { cache: 'no-store' })
        .then(async (r) => {
          if (!r.ok) throw new Error((await r.text()).trim());
          const data = await r.json();
          this.fetched = { key, ext: { nodes: data.nodes }, label: data.scope, calls: data.calls };
        })
        .catch((error) => { this.fetched = { key, ext: null, label: error.message }; })
        .finally(() => { this.fetching = null; this.rebuild(); });
    }
    return null;
  }

  rebuild() {
    const scope = this.$('flame-scope').value;
    this.$('flame-function').hidden = !(scope === 'outliers' || scope === 'typical');
    let base;
    if (scope === 'range' || scope === 'shape' || scope === 'outliers' || scope === 'typical' || scope === 'instance' ||
        (scope === 'cluster' && this.scopes && !this.model.data.live?.flame)) {
      const e = this.embeddedScope(scope);
      this.section.dataset.scopeLabel = e.label;
      this.section.dataset.scopeCapped = String(e.capped);
      const label = this.$('flame-scope-label');
      label.textContent = e.label;
      label.classList.toggle('capped', e.capped);
      base = e.tree ?? ST.flame.finish({ parent: Int32Array.of(-1), fn: Int32Array.of(-1), calls: new Float64Array(1), self: new Float64Array(1), total: new Float64Array(1) });
    } else if (scope === 'window' || scope === 'cluster') {
      const ext = this.recorded(scope);
      const label = this.fetching || !this.fetched ? 'reading the recording…' : this.fetched.label;
      this.section.dataset.scopeLabel = label;
      this.$('flame-scope-label').textContent = label;
      if (!ext) return;
      base = ST.flame.fromExtension(ext, undefined);
    } else {
      delete this.section.dataset.scopeLabel;
      delete this.section.dataset.scopeCapped;
      this.$('flame-scope-label').textContent = '';
      this.$('flame-scope-label').classList.remove('capped');
      base = ST.flame.fromExtension(this.ext, scope === 'all' || scope === '' ? undefined : this.ext.threads[Number(scope)]);
    }
    // The zoom root's stack of functions, to find it again in the new tree (a live update).
    const path = [];
    if (this.tree) for (let a = this.root; a > 0; a = this.tree.parent[a]) path.unshift(this.tree.fn[a]);
    this.tree = ST.flame.fold(base, this.$('flame-fold').value);
    this.base = base;
    this.full = ST.flame.fold(base, 'indirect');
    this.root = 0;
    for (const f of path) {
      const next = this.tree.children[this.root].find((c) => this.tree.fn[c] === f);
      if (next === undefined) { this.root = 0; break; }
      this.root = next;
    }
    // A new scope may not hold the function the funky graph was centred on.
    if (this.funkyFn !== undefined && this.funkyFn !== null && !this.tree.fn.includes(this.funkyFn))
      this.funkyFn = null;
    if (this.funkyFn === undefined || this.funkyFn === null) {
      const top = this.tree.children[0][0];
      this.funkyFn = top === undefined ? null : this.tree.fn[top];
    }
    this.search(this.$('flame-search').value);
  }

  // Regex search: matched frames filled purple, and the share of the zoom root's weight they hold
  // (frames under a matched frame not counted twice).
  search(text) {
    let re = null;
    try { re = text ? new RegExp(text) : null; } catch { re = null; }
    const cache = new Map();
    this.state.match = re ? (fn) => { if (!cache.has(fn)) cache.set(fn, re.test(this.name(fn))); return cache.get(fn); } : null;
    const out = this.$('flame-matched');
    if (re) {
      let matched = 0;
      const walk = (i) => {
        if (this.tree.fn[i] >= 0 && this.state.match(this.tree.fn[i])) { matched += this.tree.weight[i]; return; }
        for (const c of this.tree.children[i]) walk(c);
      };
      walk(this.root);
      const share = matched / (this.tree.weight[this.root] || 1);
      out.textContent = `matched ${(share * 100).toFixed(1)}%`;
      out.dataset.share = String(share);
    } else { out.textContent = ''; delete out.dataset.share; }
    this.draw();
  }

  zoom(node) {
    this.root = node;
    this.search(this.$('flame-search').value);
  }

  draw() {
    if (!this.tree) return;
    const t = this.tree;
    // Function weights change with the tree and the zoom root only, not on hover.
    if (this.weightsOf !== t || this.weightsRoot !== this.root) {
      this.state.weights = ST.flame.functionWeights(t, this.root);
      this.weightsOf = t; this.weightsRoot = this.root;
    }
    this.state.rootWeight = t.weight[this.root];
    const ancestors = [];
    for (let a = t.parent[this.root]; a > 0; a = t.parent[a]) ancestors.unshift(a);
    this.flame.draw(t, this.root, ancestors, this.state);
    this.section.dataset.drawMs = this.flame.lastDrawMs.toFixed(2);
    const crumbs = this.$('flame-crumbs');
    const path = [0, ...ancestors, ...(this.root ? [this.root] : [])];
    crumbs.innerHTML = path.map((n) => `<button type="button" data-node="${n}">${ST.fmt.html(ST.fmt.shortName(n === 0 ? 'all' : this.name(t.fn[n])))}</button>`).join(' › ');
    crumbs.querySelectorAll('button').forEach((b) => b.addEventListener('click', () => this.zoom(Number(b.dataset.node))));
    this.drawFunky();
  }

  // The funky graph of this.funkyFn (ST.flame.funky).
  drawFunky() {
    const F = this.funkyFn, t = this.full;
    this.$('funky-title').textContent = F === null ? 'Funky graph' : `Funky graph: ${ST.fmt.shortName(this.name(F))}`;
    if (F === null) return;
    if (this.funkyOf !== t || this.funkyFnBuilt !== F) { this.buildFunky(F); this.funkyOf = t; this.funkyFnBuilt = F; }
    const state = { ...this.state, weights: this.funkyWeights, rootWeight: this.funkyUp.weight[1] };
    this.callees.draw(this.funkyUp, 1, [], state);
    this.callers.draw(this.funkyDown, 1, [], { ...state, weights: new Map(), rootWeight: 1 });
  }

  // The funky graph's two trees for F, rebuilt only when F or the tree changes (not on hover).
  buildFunky(F) {
    const { up, down } = ST.flame.funky(this.base, this.full, F);
    this.funkyUp = up; this.funkyDown = down;
    this.funkyWeights = ST.flame.functionWeights(this.funkyUp, 1);
  }

  hover(rect, event) {
    const fn = rect && rect.fn >= 0 ? rect.fn : null;
    if (fn !== this.state.hoverFn) { this.state.hoverFn = fn; this.draw(); }
    this.section.dataset.hoverFunction = fn === null ? '' : String(fn);
    if (!rect || rect.node < 0) { this.app.tooltip.hide(); return; }
    const t = rect.tree, i = rect.node, f = ST.fmt;
    const stats = this.model.functions[rect.fn]?.stats;
    const calls = t.calls[i];
    // A frame of one exact call (the 'instance' scope) shows what the recording holds of its values.
    const values = calls === 1 ? t.values?.[i] : '';
    this.app.tooltip.show(event, `<b>${f.html(this.name(rect.fn))}</b><br>${values ? `<span class="call-values" data-call-values>${f.html(values)}</span><br>` : ''}
      inclusive ${f.ns(t.weight[i])} (${((t.weight[i] / (this.tree.weight[this.root] || 1)) * 100).toFixed(1)}%)<br>
      exclusive ${f.ns(t.self[i])}<br>calls ${f.count(calls)}${calls ? ` · mean ${f.ns(t.total[i] / calls)}` : ''}<br>
      function: ${f.ns((this.state.weights.get(rect.fn) || 0))} here${stats ? ` · p99 ${f.ns(stats.p99_ns)}` : ''}`);
  }

  click(rect, canvas) {
    if (rect.node < 0) return;
    this.funkyFn = rect.fn;
    if (canvas === this.flame) this.zoom(rect.node);
    else this.draw();
    // The function's clusters and outliers, in the table panel.
    this.app.flameFocus = rect.fn;
    this.app.tables?.show('flameFunction');
  }
};

// The table tab of the function last clicked in the flame or funky graph: its clusters (hover
// emphasises one on the timeline, click opens it) and its outliers (click opens the call).
ST.tabs.register({
  id: 'flameFunction',
  order: 27,
  sort: ['duration', false],
  available: (m) => ST.flame.data(m) !== null,
  define: (m, app) => {
    const f = ST.fmt;
    const fn = app.flameFocus ?? null;
    const flame = app.flameView;
    const rows = fn === null ? [] : [
      ...(flame?.hasOutliers(fn) ? [{ kind: 'flame', key: 'flame', cluster: null, what: 'flame graph of its outlier calls against its typical calls', calls: null, duration: null, p99: null }] : []),
      ...m.clusters.filter((c) => c.function === fn).map((c) => ({ kind: 'cluster', key: `c${c.id}`, cluster: c.id, what: `cluster #${c.id} (${c.shapes.length} shapes)`, calls: c.stats.count, duration: c.totalNs, p99: c.stats.p99_ns })),
      ...m.outliers.filter((o) => o.function === fn).map((o) => ({ kind: 'outlier', key: `o${o.index}`, outlier: o, cluster: o.cluster, what: `${m.threadByKey.get(m.key(o.process, o.thread))?.label ?? o.thread} at ${f.ns(o.start_ns - m.t0)}`, calls: 1, duration: o.duration_ns, p99: null })),
    ];
    return {
      label: fn === null ? 'Frame' : `Frame: ${f.shortName(m.functionName(fn))}`,
      rows,
      key: (r) => r.key,
      columns: [
        { id: 'kind', label: 'Kind', value: (r) => r.kind },
        { id: 'what', label: fn === null ? 'Click a frame of the flame graph' : 'Cluster or outlier call', value: (r) => r.what, cls: 'name' },
        { id: 'calls', label: 'Calls', num: true, value: (r) => r.calls ?? -1, text: (v) => (v < 0 ? '–' : f.count(v)) },
        { id: 'duration', label: 'Time', num: true, value: (r) => r.duration ?? Infinity, text: (v) => (v === Infinity ? '–' : f.ns(v)) },
        { id: 'p99', label: 'p99', num: true, value: (r) => r.p99 ?? -1, text: (v) => (v < 0 ? '–' : f.ns(v)) },
      ],
    };
  },
  row: (app, kind, r) => {
    if (r.cluster !== null && r.cluster !== undefined) app.hoverCluster(r.cluster);
    if (kind !== 'click') return;
    if (r.kind === 'flame') app.flameView.showOutliers(app.flameFocus);
    else if (r.kind === 'outlier') app.openOutlier(r.outlier); else app.openCluster(r.cluster);
  },
});

ST.views.register({
  id: 'flameView',
  order: 35,
  mount: (app) => new ST.FlameView(app),
  update: (view, model) => view.setModel(model),
});
