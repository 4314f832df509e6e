// One exact call instance as a call stack over time (TimeSquared style): time across, depth up
// (the instance's root along the bottom, each callee above its caller), each call a bar coloured by
// its function, the name on hover; next to it, the instance's functions with their inclusive time.
'use strict';

ST.InstanceView = class {
  static kBarH = 18;

  constructor(panel, model, tooltip) {
    this.panel = panel;
    this.canvas = panel.querySelector('#instance');
    this.title = panel.querySelector('#instance-title');
    this.list = panel.querySelector('#instance-functions');
    this.model = model;
    this.tooltip = tooltip;
    this.instance = null;
    this.canvas.addEventListener('mousemove', (e) => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => this.tooltip.hide());
    window.addEventListener('resize', () => this.draw());
  }

  setModel(model) { this.model = model; }

  // `note` says how the instance relates to the click (e.g. "nearest embedded instance").
  show(instance, note) {
    this.instance = instance;
    const m = this.model, f = ST.fmt;
    const name = m.functionName(instance.function);
    const thread = m.threadByKey.get(m.key(instance.process, instance.thread));
    const why = { first: 'first occurrence of its cluster', slowest: 'from its cluster\'s slowest bin', outlier: 'outlier', live: 'read from the recording' }[instance.reason] || instance.reason;
    const values = f.callValues(instance.calls[0]);
    this.title.innerHTML = `${f.html(name)}${values ? ` <span class="call-values" data-call-values>${f.html(values)}</span>` : ''}<span class="sub">${f.ns(instance.duration_ns)} · ` +
      `${f.html(thread ? thread.label : instance.thread)} · at ${f.ns(instance.start_ns - m.t0)} · ` +
      `${instance.calls.length} calls · ${why}` +
      `${instance.cluster !== null ? ` · cluster #${instance.cluster}` : ''} · shape #${instance.shape}` +
      `${instance.omitted_calls ? ` · ${f.count(instance.omitted_calls)} more calls not embedded` : ''}` +
      `${note ? ` · ${f.html(note)}` : ''}</span>` +
      (ST.flame?.data(m) ? ' <button type="button" class="instance-flame">flame graph of this call</button>' : '');
    this.title.querySelector('.instance-flame')?.addEventListener('click', () => ST.app?.flameView?.showInstance(instance));
    this.panel.classList.add('has-instance');
    this.panel.dataset.instance = instance.id;
    this.listFunctions();
    this.draw();
  }

  listFunctions() {
    const m = this.model, f = ST.fmt;
    const total = new Map();
    for (const [fn, , start, end] of this.instance.calls) {
      const e = total.get(fn) || { calls: 0, ns: 0 };
      e.calls += 1;
      e.ns += end - start;
      total.set(fn, e);
    }
    const rows = [...total.entries()].sort((a, b) => b[1].ns - a[1].ns);
    this.list.innerHTML = rows.map(([fn, e]) =>
      `<div class="row" data-function="${f.html(m.functionName(fn))}"><span class="swatch" style="background:${m.functions[fn].color}"></span>` +
      `<span class="name" title="${f.html(m.functionName(fn))}">${f.html(f.shortName(m.functionName(fn)))}</span>` +
      `<span class="num">${e.calls}× ${f.ns(e.ns)}</span></div>`).join('');
  }

  draw() {
    if (!this.instance) return;
    const calls = this.instance.calls;
    const maxDepth = calls.reduce((d, c) => Math.max(d, c[1]), 0);
    const H = ST.InstanceView.kBarH;
    const height = Math.max(120, (maxDepth + 1) * H + 30);
    const width = this.canvas.parentElement.clientWidth || 800;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.style.height = `${height}px`;
    this.canvas.width = Math.round(width * dpr);
    this.canvas.height = Math.round(height * dpr);
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const span = Math.max(1, this.instance.duration_ns);
    const left = 4, right = width - 4, bottom = height - 22;
    this.geometry = { left, right, bottom, span, H };
    const font = getComputedStyle(document.body).fontFamily;
    ctx.font = `11px ${font}`;
    for (const [fn, depth, start, end] of calls) {
      const x0 = left + start / span * (right - left);
      const w = Math.max(1, (end - start) / span * (right - left));
      const y = bottom - (depth + 1) * H;
      ctx.fillStyle = this.model.functions[fn].color;
      ctx.fillRect(x0, y + 1, w, H - 2);
      if (w > 40) {
        ctx.fillStyle = '#fff';
        const label = ST.fmt.shortName(this.model.functionName(fn));
        ctx.save();
        ctx.beginPath();
        ctx.rect(x0, y, w - 2, H);
        ctx.clip();
        ctx.fillText(label, x0 + 3, y + 13);
        ctx.restore();
      }
    }
    // Time axis under the stack.
    ctx.fillStyle = '#636c76';
    ctx.strokeStyle = '#dde1e6';
    ctx.beginPath();
    ctx.moveTo(left, bottom + 0.5);
    ctx.lineTo(right, bottom + 0.5);
    ctx.stroke();
    for (let i = 0; i <= 4; ++i) {
      const x = left + i / 4 * (right - left);
      const text = ST.fmt.ns(span * i / 4);
      const w = ctx.measureText(text).width;
      ctx.fillText(text, Math.min(Math.max(left, x - w / 2), right - w), bottom + 15);
    }
  }

  // The call under the mouse: the deepest bar at that point.
  hover(e) {
    if (!this.instance || !this.geometry) return;
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    const { left, right, bottom, span, H } = this.geometry;
    const depth = Math.floor((bottom - y) / H);
    const t = (x - left) / (right - left) * span;
    const call = this.instance.calls.find((c) => c[1] === depth && c[2] <= t && t <= c[3]);
    if (!call) { this.tooltip.hide(); return; }
    const f = ST.fmt, values = f.callValues(call);
    this.tooltip.show(e, `<div>${f.html(this.model.functionName(call[0]))}</div>` +
      (values ? `<div class="call-values" data-call-values>${f.html(values)}</div>` : '') +
      `<div class="t">${f.ns(call[3] - call[2])} · depth ${call[1]} · at +${f.ns(call[2])}</div>`);
  }
};

ST.views.register({
  id: 'instanceView',
  order: 30,
  mount: (app) => new ST.InstanceView(document.getElementById('instance-panel'), app.model, app.tooltip),
});
