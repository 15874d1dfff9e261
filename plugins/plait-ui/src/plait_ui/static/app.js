// plait ui: the graph (cytoscape + dagre; folding, search, focus, a minimap), the
// scrubber's keys and range, live updates.
// No inline code anywhere (the content security policy allows only this origin's files).
(function () {
  "use strict";

  // -- the graph -----------------------------------------------------------------------
  //
  // The page keeps every node and edge the server sent; cytoscape holds what is shown: a
  // folded group (a fragment, a foreach block) stands for everything inside it, with one
  // edge per neighbour ("meta" edges). The first view is one a person can read: the whole
  // graph when its labels are big enough on screen, else the groups folded, else a
  // readable zoom around the node to look at (failed, waiting, pending, last ran).

  var FONT = 10;          // a node label's font size (graph units)
  var LEGIBLE_PX = 8;     // a fitted view whose labels are smaller on screen is not readable
  var READ_PX = 12;       // the on-screen label size a zoom-to-read aims at
  var FOLD_ABOVE = 100;   // graphs of more executors open with their groups folded
  // what a folded group shows, first wins (diverged: a replay report's first difference)
  var STATES = ["diverged", "failed", "waiting", "pending", "ran"];

  function GraphView(box, graph) {
    var self = this;
    this.box = box;
    this.nodes = {};      // id -> the element the server sent
    this.children = {};   // group id -> ids of its direct children
    this.edges = [];
    this.order = [];
    this.folded = {};     // group id -> true
    this.preset = graph.layout === "preset";
    this.dagreLimit = graph.dagre_limit || 300;
    graph.elements.forEach(function (e) {
      if ("source" in e.data) { self.edges.push(e); return; }
      self.nodes[e.data.id] = e;
      self.order.push(e.data.id);
      var parent = e.data.parent;
      if (parent) (self.children[parent] = self.children[parent] || []).push(e.data.id);
    });
    this.executors = this.order.filter(function (id) { return !self.isGroup(id); });
    // a folded group is drawn where its insides were laid out (big graphs: server positions)
    this.presetOf = {};
    this.order.forEach(function (id) {
      var p = self.nodes[id].position;
      if (p) self.presetOf[id] = { x: p.x, y: p.y };
    });
    this.searchHits = [];
    this.searchAt = -1;
    this.storeKey = "plait-folded:" + window.location.pathname;
  }

  GraphView.prototype.isGroup = function (id) {
    return /(^|\s)group(\s|$)/.test(this.nodes[id].classes || "");
  };

  GraphView.prototype.ancestors = function (id) {
    var out = [], at = this.nodes[id] && this.nodes[id].data.parent;
    while (at) { out.push(at); at = this.nodes[at] && this.nodes[at].data.parent; }
    return out;
  };

  // the node that stands for ``id`` on screen: itself, or its outermost folded group
  GraphView.prototype.shownAs = function (id) {
    var shown = id, ups = this.ancestors(id);
    for (var i = 0; i < ups.length; i++) if (this.folded[ups[i]]) shown = ups[i];
    return shown;
  };

  GraphView.prototype.descendants = function (id) {
    var out = [], stack = (this.children[id] || []).slice();
    while (stack.length) {
      var next = stack.pop();
      out.push(next);
      (this.children[next] || []).forEach(function (c) { stack.push(c); });
    }
    return out;
  };

  GraphView.prototype.statesOf = function (id) {
    return (this.nodes[id].classes || "").split(/\s+/).filter(function (c) {
      return STATES.indexOf(c) >= 0;
    });
  };

  // the element of a node as it is to be shown now (a folded group: its count and states)
  GraphView.prototype.elementOf = function (id) {
    var self = this, e = this.nodes[id];
    var data = {}, k;
    for (k in e.data) data[k] = e.data[k];
    var classes = e.classes || "";
    if (this.folded[id]) {
      var inside = this.descendants(id).filter(function (d) { return !self.isGroup(d); });
      var seen = {};
      inside.forEach(function (d) { self.statesOf(d).forEach(function (s) { seen[s] = 1; }); });
      var state = STATES.filter(function (s) { return seen[s]; })[0];
      data.folded = inside.length;
      data.foldLabel = data.label + " (" + inside.length + ")";
      classes += " collapsed" + (state ? " " + state : "");
    }
    var out = { group: "nodes", data: data, classes: classes };
    if (this.presetOf[id]) out.position = { x: this.presetOf[id].x, y: this.presetOf[id].y };
    return out;
  };

  GraphView.prototype.visibleIds = function () {
    var self = this;
    return this.order.filter(function (id) { return self.shownAs(id) === id; });
  };

  // the edges between what is shown: the real ones, and one "meta" edge per pair of
  // shown nodes that real edges join through a folded group
  GraphView.prototype.visibleEdges = function () {
    var self = this, out = [], seen = {};
    this.edges.forEach(function (e) {
      var s = self.shownAs(e.data.source), t = self.shownAs(e.data.target);
      if (s === e.data.source && t === e.data.target) { out.push(e); return; }
      if (s === t || seen[s + "\u0000" + t]) return;
      seen[s + "\u0000" + t] = true;
      out.push({ group: "edges", classes: "meta",
                 data: { id: "meta#" + out.length + "#" + s, source: s, target: t } });
    });
    return out;
  };

  // put in cytoscape what is to be shown now, and lay it out
  GraphView.prototype.render = function () {
    var self = this, cy = this.cy;
    var ids = this.visibleIds();
    cy.batch(function () {
      cy.elements().remove();
      cy.add(ids.map(function (id) { return self.elementOf(id); }));
      cy.add(self.visibleEdges());
    });
    this.layout(ids.length);
    this.drawMinimap();
  };

  GraphView.prototype.layout = function (count) {
    var self = this;
    if (count <= this.dagreLimit) {
      this.cy.layout({ name: "dagre", rankDir: "LR", nodeSep: 12, rankSep: 40, fit: false,
                       animate: false }).run();
      return;
    }
    // too many for dagre: the server's layers; a folded group sits at its insides' middle
    Object.keys(this.folded).forEach(function (id) {
      var xs = 0, ys = 0, n = 0;
      self.descendants(id).forEach(function (d) {
        var p = self.presetOf[d];
        if (p && !self.isGroup(d)) { xs += p.x; ys += p.y; n += 1; }
      });
      var node = self.cy.getElementById(id);
      if (n && node.nonempty()) node.position({ x: xs / n, y: ys / n });
    });
  };

  GraphView.prototype.legible = function () {
    return this.cy.zoom() * FONT >= LEGIBLE_PX;
  };

  // the node to look at first: failed, waiting on a request, pending, last ran, the start
  GraphView.prototype.focusId = function () {
    var self = this;
    for (var i = 0; i < STATES.length; i++) {
      var hit = this.executors.filter(function (id) {
        return self.statesOf(id).indexOf(STATES[i]) >= 0;
      });
      if (hit.length) return hit[0];
    }
    var start = this.executors.filter(function (id) {
      return /(^|\s)start(\s|$)/.test(self.nodes[id].classes || "");
    });
    return start[0] || this.executors[0];
  };

  GraphView.prototype.readAt = function (id) {
    var node = this.cy.getElementById(this.shownAs(id));
    if (node.empty()) return;
    this.cy.zoom(READ_PX / FONT);
    this.cy.center(node);
  };

  GraphView.prototype.fit = function () {
    this.cy.fit(undefined, 20);
  };

  GraphView.prototype.topGroups = function () {
    var self = this;
    return this.order.filter(function (id) {
      return self.isGroup(id) && !self.nodes[id].data.parent;
    });
  };

  // whether the whole graph, fitted, would be too small to read, from the server's
  // positions (a big graph is folded before it is ever drawn unfolded)
  GraphView.prototype.presetTooSmall = function () {
    var self = this, x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
    this.executors.forEach(function (id) {
      var p = self.presetOf[id];
      if (!p) return;
      x1 = Math.min(x1, p.x); x2 = Math.max(x2, p.x); y1 = Math.min(y1, p.y); y2 = Math.max(y2, p.y);
    });
    if (x1 === Infinity) return false;
    var zoom = Math.min((this.box.clientWidth - 40) / (x2 - x1 + 90),
                        (this.box.clientHeight - 40) / (y2 - y1 + 22));
    return zoom * FONT < LEGIBLE_PX;
  };

  GraphView.prototype.firstView = function () {
    var self = this;
    this.fit();
    if (this.legible()) return;
    var tops = this.topGroups();
    if (!this.kept && this.executors.length > FOLD_ABOVE && tops.length &&
        !Object.keys(this.folded).length) {
      tops.forEach(function (id) { self.folded[id] = true; });
      this.render();
      this.fit();
      if (this.legible()) return;
    }
    this.readAt(this.focusId());
  };

  // what the user folded is kept for this run's pages (following a run reloads the page
  // at every checkpoint)
  GraphView.prototype.remember = function () {
    try {
      sessionStorage.setItem(this.storeKey, JSON.stringify(Object.keys(this.folded)));
    } catch (e) { /* storage full or off: folds are not kept */ }
  };

  GraphView.prototype.remembered = function () {
    var self = this, kept;
    try { kept = JSON.parse(sessionStorage.getItem(this.storeKey) || "null"); } catch (e) { kept = null; }
    if (!Array.isArray(kept)) return false;
    this.folded = {};
    kept.forEach(function (id) { if (self.nodes[id] && self.isGroup(id)) self.folded[id] = true; });
    return true;
  };

  GraphView.prototype.toggle = function (id) {
    if (this.folded[id]) delete this.folded[id]; else this.folded[id] = true;
    this.remember();
    this.render();
    // the whole graph if it reads at that size, else a readable zoom on the group
    this.fit();
    if (!this.legible()) this.readAt(id);
  };

  // unfold every group around ``id`` and show it at a readable zoom
  GraphView.prototype.reveal = function (id) {
    var self = this, changed = false;
    if (!this.nodes[id]) return false;
    this.ancestors(id).forEach(function (a) {
      if (self.folded[a]) { delete self.folded[a]; changed = true; }
    });
    if (changed) { this.remember(); this.render(); }
    this.cy.elements().unselect();
    this.cy.getElementById(id).select();
    this.readAt(id);
    return true;
  };

  GraphView.prototype.foldAll = function (fold) {
    var self = this;
    this.folded = {};
    if (fold) this.order.forEach(function (id) {
      if (self.isGroup(id) && !self.nodes[id].data.parent) self.folded[id] = true;
    });
    this.remember();
    this.render();
    this.fit();
    if (!this.legible()) this.readAt(this.focusId());
  };

  GraphView.prototype.search = function (text) {
    var self = this, needle = text.trim().toLowerCase(), count = document.getElementById("graph-search-count");
    if (!needle) { this.searchHits = []; count.textContent = ""; return; }
    if (needle !== this.searchText) {
      this.searchText = needle;
      this.searchHits = this.order.filter(function (id) {
        return id.toLowerCase().indexOf(needle) >= 0 ||
          String(self.nodes[id].data.label).toLowerCase().indexOf(needle) >= 0;
      });
      this.searchAt = -1;
    }
    if (!this.searchHits.length) { count.textContent = "no node matches"; return; }
    this.searchAt = (this.searchAt + 1) % this.searchHits.length;
    this.reveal(this.searchHits[this.searchAt]);
    count.textContent = (this.searchAt + 1) + " of " + this.searchHits.length + ": " +
      this.searchHits[this.searchAt];
  };

  // the minimap: every shown node as a dot, the window as a frame; a click moves there
  GraphView.prototype.drawMinimap = function () {
    var canvas = this.minimap;
    if (!canvas || this.minimapQueued) return;
    var self = this;
    this.minimapQueued = true;
    requestAnimationFrame(function () {
      self.minimapQueued = false;
      var cy = self.cy, ctx = canvas.getContext("2d");
      var all = cy.elements().boundingBox(), ext = cy.extent();
      var w = canvas.width, h = canvas.height;
      var scale = Math.min(w / Math.max(all.w, 1), h / Math.max(all.h, 1)) * 0.92;
      var ox = (w - all.w * scale) / 2 - all.x1 * scale, oy = (h - all.h * scale) / 2 - all.y1 * scale;
      self.minimapScale = { scale: scale, ox: ox, oy: oy };
      ctx.clearRect(0, 0, w, h);
      cy.nodes().forEach(function (n) {
        if (n.isParent()) return;
        var b = n.boundingBox({ includeLabels: false });
        ctx.fillStyle = n.hasClass("failed") ? "#bf616a" : n.hasClass("waiting") ? "#ebcb8b"
          : n.hasClass("pending") ? "#88c0d0" : n.hasClass("ran") ? "#a3be8c" : "#7b8494";
        ctx.fillRect(ox + b.x1 * scale, oy + b.y1 * scale,
                     Math.max(b.w * scale, 1.5), Math.max(b.h * scale, 1.5));
      });
      ctx.strokeStyle = "#5e81ac";
      ctx.lineWidth = 1.5;
      ctx.strokeRect(ox + ext.x1 * scale, oy + ext.y1 * scale,
                     Math.max(ext.w * scale, 3), Math.max(ext.h * scale, 3));
    });
  };

  GraphView.prototype.minimapGo = function (event) {
    var m = this.minimapScale;
    if (!m) return;
    var r = this.minimap.getBoundingClientRect();
    var x = (event.clientX - r.left - m.ox) / m.scale, y = (event.clientY - r.top - m.oy) / m.scale;
    var zoom = this.cy.zoom();
    this.cy.pan({ x: this.cy.width() / 2 - x * zoom, y: this.cy.height() / 2 - y * zoom });
  };

  GraphView.prototype.start = function () {
    var self = this, box = this.box;
    var big = this.preset;
    var tops = this.topGroups();
    this.kept = this.remembered();
    if (!this.kept && big && this.executors.length > FOLD_ABOVE && tops.length &&
        this.presetTooSmall()) {
      tops.forEach(function (id) { self.folded[id] = true; });
    }
    var shown = this.visibleIds();
    var first = shown.map(function (id) { return self.elementOf(id); });
    this.cy = cytoscape({
      container: box,
      pixelRatio: 1,
      elements: first.concat(this.visibleEdges()),
      textureOnViewport: true,
      hideEdgesOnViewport: this.edges.length > 2000,
      style: [
        { selector: "node", style: {
          "label": "data(label)", "font-size": FONT, "text-valign": "center",
          "background-color": "#d8dee9", "border-width": 1, "border-color": "#4c566a",
          "shape": "round-rectangle", "width": 90, "height": 22,
          "text-max-width": 86, "text-wrap": "ellipsis",
          // labels too small to read are not drawn: big graphs stay fast
          "min-zoomed-font-size": 7 } },
        { selector: "node.group", style: {
          "background-color": "#f5f7fa", "text-valign": "top", "font-weight": "bold",
          "border-style": "dashed" } },
        { selector: "node.foreach", style: { "border-color": "#5e81ac", "border-width": 2 } },
        { selector: "node.start", style: { "border-width": 3 } },
        { selector: "node.collapsed", style: {
          "background-color": "#e5e9f0", "label": "data(foldLabel)", "text-valign": "center",
          "width": 110, "height": 30, "border-style": "double", "border-width": 3 } },
        { selector: "node.ran", style: { "background-color": "#a3be8c" } },
        { selector: "node.pending", style: { "background-color": "#88c0d0" } },
        { selector: "node.waiting", style: { "background-color": "#ebcb8b" } },
        { selector: "node.failed", style: { "background-color": "#bf616a", "color": "#fff" } },
        { selector: "node.diverged", style: {
          "border-color": "#8f3f97", "border-width": 6, "border-style": "double" } },
        { selector: "node:selected", style: { "border-color": "#d08770", "border-width": 4 } },
        { selector: "edge", style: {
          // haystack edges (straight, no arrow) draw far faster: for big graphs
          "width": 1, "curve-style": big ? "haystack" : "bezier",
          "target-arrow-shape": big ? "none" : "triangle",
          "line-color": "#81a1c1", "target-arrow-color": "#81a1c1" } },
        { selector: "edge.meta", style: { "width": 2, "line-style": "dashed" } }
      ],
      // big graphs come with positions (a layered layout on the server): dagre is too
      // slow for them
      layout: { name: "preset", fit: false }
    });
    this.layout(shown.length);
    this.cy.on("dbltap", "node.group", function (event) { self.toggle(event.target.id()); });
    this.minimap = document.getElementById("graph-minimap");
    if (this.minimap) {
      this.cy.on("viewport", function () { self.drawMinimap(); });
      this.minimap.addEventListener("click", function (event) { self.minimapGo(event); });
    }
    this.firstView();
    this.drawMinimap();
    controls(this);
  };

  function controls(view) {
    function on(id, handler) {
      var element = document.getElementById(id);
      if (element) element.addEventListener("click", handler);
    }
    on("graph-fit", function () { view.fit(); });
    on("graph-focus", function () { view.reveal(view.focusId()); });
    on("graph-fold", function () { view.foldAll(true); });
    on("graph-unfold", function () { view.foldAll(false); });
    var form = document.getElementById("graph-search-form");
    var input = document.getElementById("graph-search");
    if (form && input) form.addEventListener("submit", function (event) {
      event.preventDefault();
      view.search(input.value);
    });
  }

  function drawGraph() {
    var box = document.getElementById("graph");
    if (!box || typeof cytoscape === "undefined") return;
    fetch(box.dataset.url, { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (graph) {
        if (graph.error) {  // a checkpoint that cannot be read: the server says which
          box.textContent = graph.error;
          box.dataset.rendered = "error";
          return;
        }
        if (graph.missing) {
          box.textContent = "This run's store holds no topology (it is kept on a run's first checkpoint).";
          box.dataset.rendered = "missing";
          return;
        }
        var started = performance.now();
        var view = new GraphView(box, graph);
        view.start();
        box.dataset.nodes = String(view.executors.length);
        box.dataset.edges = String(view.edges.length);
        box.dataset.layoutMs = String(Math.round(performance.now() - started));
        window.plaitGraph = view.cy;
        window.plaitGraphView = view;
        // "rendered" once the first frame is painted, not when the layout is done
        requestAnimationFrame(function () {
          requestAnimationFrame(function () {
            box.dataset.paintMs = String(Math.round(performance.now() - started));
            box.dataset.zoom = String(view.cy.zoom());
            box.dataset.rendered = "true";
          });
        });
      })
      .catch(function (err) {
        box.textContent = "The graph could not be drawn: " + err;
        box.dataset.rendered = "error";
      });
  }

  function scrubber() {
    var section = document.getElementById("scrubber");
    var data = document.getElementById("checkpoint-ids");
    if (!section || !data) return;
    var ids = JSON.parse(data.textContent);
    var range = document.getElementById("scrub-range");
    function go(index) {
      if (index < 0 || index >= ids.length) return;
      window.location.search = "?checkpoint=" + encodeURIComponent(ids[index]);
    }
    if (range) range.addEventListener("change", function () { go(Number(range.value)); });
    document.addEventListener("keydown", function (event) {
      if (event.target && /INPUT|TEXTAREA|SELECT/.test(event.target.tagName) && event.target !== range) return;
      var current = range ? Number(range.value) : 0;
      if (event.key === "ArrowLeft") { event.preventDefault(); go(current - 1); }
      if (event.key === "ArrowRight") { event.preventDefault(); go(current + 1); }
    });
  }

  function live() {
    var box = document.getElementById("live");
    if (!box || typeof EventSource === "undefined") return;
    var known = box.dataset.latest;
    var follow = document.getElementById("follow");
    var note = document.getElementById("new-supersteps");
    if (box.dataset.follow === "1") sessionStorage.setItem("plait-follow", "1");  // an answered run
    follow.checked = sessionStorage.getItem("plait-follow") === "1";
    follow.addEventListener("change", function () {
      sessionStorage.setItem("plait-follow", follow.checked ? "1" : "0");
    });
    // a page that following opened (``follow=1``): a checkpoint written while it was on its
    // way (after the one it was sent to, before its events began) is the latest already,
    // and the events will not announce it again; go on to it. A page the user scrubbed to
    // has no ``follow=1`` and stays.
    if (follow.checked && box.dataset.follow === "1" && box.dataset.shown !== known) {
      window.location.search = "?checkpoint=" + encodeURIComponent(known) + "&follow=1";
      return;
    }
    var fresh = 0;
    var source = new EventSource(box.dataset.events);
    source.addEventListener("checkpoint", function (event) {
      var data = JSON.parse(event.data);
      if (data.checkpoint_id === known) return;
      known = data.checkpoint_id;
      fresh += 1;
      if (follow.checked) {
        window.location.search = "?checkpoint=" + encodeURIComponent(data.checkpoint_id) +
          "&follow=1";
        return;
      }
      note.hidden = false;
      note.textContent = "";
      var link = document.createElement("a");
      link.href = box.dataset.run + "?checkpoint=" + encodeURIComponent(data.checkpoint_id);
      link.textContent = fresh + " new checkpoint(s) since you looked (superstep " +
        data.superstep + ", " + data.status + ")";
      note.appendChild(link);
    });
    window.addEventListener("beforeunload", function () { source.close(); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawGraph();
    scrubber();
    live();
  });
})();
