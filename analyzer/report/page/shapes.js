// Shapes drawn as small trees, as Fig. 2/3 of the Shapes paper draw them: a node per function, its
// children (the set of child shapes; null is not drawn) below it, and the cluster panel that shows
// a cluster's shapes with its statistics.
'use strict';

ST.shapes = {
  kNodeW: 74, kNodeH: 16, kGapX: 6, kLevelH: 28, kMaxNodes: 48,
  mergeRecursion: true, // the timeline toolbar's switch

  // A node's children with direct recursion merged (as flame graph tools' "merge recursion"): a
  // child of the node's own function is its next level, whose children become the node's.
  // Returns the children and the number of levels merged into the node.
  mergedChildren(model, shape) {
    const children = new Set();
    let levels = 1, frontier = shape.children;
    while (frontier.length) {
      const next = [];
      let merged = false;
      for (const id of frontier) {
        const child = model.shapes.get(id);
        if (child && child.function === shape.function) {
          next.push(...child.children);
          merged = true;
        } else {
          children.add(id);
        }
      }
      if (merged) levels++;
      frontier = next;
    }
    return { children: [...children], levels };
  },

  // Lays out the tree of `shapeId`: leaves take consecutive slots, a parent sits centred over its
  // children. Stops adding nodes at kMaxNodes (the cut is drawn as an ellipsis node).
  layout(model, shapeId) {
    const nodes = [], edges = [];
    let slot = 0, cut = false;
    const place = (id, depth) => {
      const shape = model.shapes.get(id);
      const node = { id, depth, function: shape ? shape.function : null, x: 0, levels: 1 };
      nodes.push(node);
      let children = shape ? shape.children : [];
      if (shape && ST.shapes.mergeRecursion) ({ children, levels: node.levels } = ST.shapes.mergedChildren(model, shape));
      if (!children.length) {
        node.x = slot++;
        return node;
      }
      const placed = [];
      for (const child of children) {
        if (nodes.length >= ST.shapes.kMaxNodes) { cut = true; break; }
        placed.push(place(child, depth + 1));
      }
      if (!placed.length) { node.x = slot++; return node; }
      for (const c of placed) edges.push([node, c]);
      node.x = (placed[0].x + placed[placed.length - 1].x) / 2;
      return node;
    };
    place(shapeId, 0);
    return { nodes, edges, slots: Math.max(slot, 1), depth: Math.max(...nodes.map((n) => n.depth)), cut };
  },

  // The tree as an SVG element string. Each node carries data-function (its function's name) so
  // the page can be tested and searched.
  svg(model, shapeId) {
    const { kNodeW: w, kNodeH: h, kGapX: gx, kLevelH: lh } = ST.shapes;
    const tree = ST.shapes.layout(model, shapeId);
    const width = tree.slots * (w + gx) - gx + 2;
    const height = (tree.depth + 1) * lh - (lh - h) + 2 + (tree.cut ? 12 : 0);
    const cx = (n) => 1 + n.x * (w + gx) + w / 2;
    const cy = (n) => 1 + n.depth * lh;
    const parts = [];
    for (const [a, b] of tree.edges)
      parts.push(`<line x1="${cx(a)}" y1="${cy(a) + h}" x2="${cx(b)}" y2="${cy(b)}"/>`);
    for (const n of tree.nodes) {
      const name = n.function === null ? '?' : model.functionName(n.function);
      const fill = n.function === null ? '#ccc' : model.functions[n.function].color;
      const label = ST.fmt.leafName(name);
      const levels = n.levels > 1 ? ` ×${n.levels}` : '';
      const room = 12 - levels.length;
      const shown = (label.length > room ? `${label.slice(0, room - 1)}…` : label) + levels;
      const title = n.levels > 1 ? `${name}: ${n.levels} levels of recursion merged` : name;
      parts.push(`<g class="node" data-function="${ST.fmt.html(name)}"${n.levels > 1 ? ` data-levels="${n.levels}"` : ''}><title>${ST.fmt.html(title)}</title>` +
        `<rect x="${cx(n) - w / 2}" y="${cy(n)}" width="${w}" height="${h}" rx="3" fill="${fill}" fill-opacity="0.22" stroke="${fill}"/>` +
        `<text x="${cx(n)}" y="${cy(n) + 11.5}" text-anchor="middle">${ST.fmt.html(shown)}</text></g>`);
    }
    if (tree.cut)
      parts.push(`<text x="2" y="${height - 2}" fill="#636c76">… larger than ${ST.shapes.kMaxNodes} nodes, cut</text>`);
    return `<svg class="shape-tree" data-shape="${shapeId}" width="${width}" height="${height}" ` +
      `viewBox="0 0 ${width} ${height}">${parts.join('')}</svg>`;
  },
};

// The side panel: one cluster's identity, statistics and shapes.
ST.ClusterPanel = class {
  constructor(element, model) {
    this.element = element;
    this.model = model;
    this.shown = null;
  }

  setModel(model) {
    this.model = model;
    if (this.shown !== null) this.show(this.shown, true);
  }

  show(clusterId, force) {
    if (clusterId === this.shown && !force) return;
    const c = this.model.clusters[clusterId];
    if (!c) return;
    this.shown = clusterId;
    const f = ST.fmt, s = c.stats;
    const name = this.model.functionName(c.function);
    const stat = (k, v, bad) => `<div class="stat${bad ? ' bad' : ''}"><div class="k">${k}</div><div class="v">${v}</div></div>`;
    const shapes = c.shapes.slice(0, 8).map((id) => {
      const shape = this.model.shapes.get(id);
      return `<div class="shape-card"><div class="meta">shape #${id} · depth ${shape.depth} · ` +
        `${f.count(shape.calls)} call${shape.calls === 1 ? '' : 's'} · ${f.meanOf(shape.stats)}` +
        `${shape.outliers ? ` · <b style="color:var(--outlier)">${shape.outliers} outliers</b>` : ''}` +
        `${this.model.data.flame_scopes?.shapes?.some((e) => e.shape === id) ? ` <button type="button" class="shape-flame" data-shape="${id}">flame graph</button>` : ''}</div>` +
        `${ST.shapes.svg(this.model, id)}</div>`;
    }).join('');
    const more = c.shapes.length > 8 ? `<div class="placeholder">and ${c.shapes.length - 8} more shapes</div>` : '';
    this.element.innerHTML =
      `<div class="cluster-title" data-cluster="${clusterId}"><span class="swatch" style="background:${c.color}"></span>` +
      `${f.html(name)}</div>` +
      `<div class="cluster-sub">cluster #${clusterId} · ${c.shapes.length} shape${c.shapes.length === 1 ? '' : 's'} · depth ${c.depth}` +
      `${c.trivial ? ' · leaf' : ''}</div>` +
      `<div class="stats">` +
      stat('calls', f.count(s.count)) + stat('time Σ calls', f.ns(c.totalNs)) + stat('threads', f.count(c.threads)) + stat('mean', s.count ? f.ns(s.mean_ns) : '–') +
      stat('sd', s.count > 1 ? f.ns(s.sd_ns) : '–') + stat('p50', f.ns(s.p50_ns)) + stat('p99', f.ns(s.p99_ns)) +
      stat('min', f.ns(s.min_ns)) + stat('max', f.ns(s.max_ns)) + stat('outliers', f.count(c.outliers), c.outliers > 0) +
      stat('max distance', c.max_distance.toFixed(2)) +
      stat('instances', this.model.clusterInstances(clusterId).length) +
      `</div>${this.model.data.live?.flame || this.model.data.flame_scopes?.clusters.some((e) => e.cluster === clusterId) ? '<button type="button" class="cluster-flame">flame graph of its calls</button>' : ''}` +
      `<div class="section-title">Shapes</div>${shapes}${more}`;
    // This cluster's flame graph: read from the collector's recording live, embedded in a report.
    this.element.querySelector('.cluster-flame')?.addEventListener('click', () => ST.app?.flameView?.showCluster(clusterId));
    this.element.querySelectorAll('.shape-flame').forEach((b) => b.addEventListener('click', () => ST.app?.flameView?.showShape(Number(b.dataset.shape))));
  }
};

ST.views.register({
  id: 'clusterPanel',
  order: 20,
  mount: (app) => new ST.ClusterPanel(document.getElementById('cluster-panel'), app.model),
});
