// plait ui: the graph (cytoscape + dagre), the scrubber's keys and range, live updates.
// No inline code anywhere (the content security policy allows only this origin's files).
(function () {
  "use strict";

  function drawGraph() {
    var box = document.getElementById("graph");
    if (!box || typeof cytoscape === "undefined") return;
    fetch(box.dataset.url, { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (graph) {
        if (graph.missing) {
          box.textContent = "This run's store holds no topology (it is kept on a run's first checkpoint).";
          box.dataset.rendered = "missing";
          return;
        }
        var started = performance.now();
        var big = graph.layout === "preset";
        var cy = cytoscape({
          container: box,
          pixelRatio: 1,
          elements: graph.elements,
          textureOnViewport: true,
          hideEdgesOnViewport: graph.elements.length > 2000,
          style: [
            { selector: "node", style: {
              "label": "data(label)", "font-size": 10, "text-valign": "center",
              "background-color": "#d8dee9", "border-width": 1, "border-color": "#4c566a",
              "shape": "round-rectangle", "width": 90, "height": 22,
              "text-max-width": 86, "text-wrap": "ellipsis",
              // labels too small to read are not drawn: big graphs stay fast
              "min-zoomed-font-size": 7 } },
            { selector: "node.group", style: {
              "background-color": "#f5f7fa", "text-valign": "top", "font-weight": "bold",
              "border-style": "dashed" } },
            { selector: "node.start", style: { "border-width": 3 } },
            { selector: "node.collapsed", style: {
              "background-color": "#d8dee9", "label": "data(label)", "width": 60, "height": 30 } },
            { selector: "node.ran", style: { "background-color": "#a3be8c" } },
            { selector: "node.pending", style: { "background-color": "#88c0d0" } },
            { selector: "node.waiting", style: { "background-color": "#ebcb8b" } },
            { selector: "node.failed", style: { "background-color": "#bf616a", "color": "#fff" } },
            { selector: "edge", style: {
              // haystack edges (straight, no arrow) draw far faster: for big graphs
              "width": 1, "curve-style": big ? "haystack" : "bezier",
              "target-arrow-shape": big ? "none" : "triangle",
              "line-color": "#81a1c1", "target-arrow-color": "#81a1c1" } }
          ],
          // big graphs come with positions (a layered layout on the server): dagre is
          // too slow for them
          layout: graph.layout === "preset" ? { name: "preset", fit: true }
            : { name: "dagre", rankDir: "LR", nodeSep: 12, rankSep: 40 }
        });
        // a compound (nested workflow) collapses to its box on double click
        // (taken out of the graph and put back: restyling 100 hidden children took 15 s)
        cy.on("dbltap", "node.group", function (event) {
          var group = event.target;
          var folded = group.scratch("plaitFolded");
          cy.batch(function () {
            if (folded) {
              folded.restore();
              group.scratch("plaitFolded", null);
            } else {
              var inside = group.descendants();
              group.scratch("plaitFolded", inside.union(inside.connectedEdges()).remove());
            }
            group.toggleClass("collapsed", !folded);
          });
          group.data("folded", folded ? 0 : group.scratch("plaitFolded").nodes().length);
        });
        box.dataset.nodes = String(cy.nodes().not(".group").length);
        box.dataset.edges = String(cy.edges().length);
        box.dataset.layoutMs = String(Math.round(performance.now() - started));
        window.plaitGraph = cy;
        // "rendered" once the first frame is painted, not when the layout is done
        requestAnimationFrame(function () {
          requestAnimationFrame(function () {
            box.dataset.paintMs = String(Math.round(performance.now() - started));
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
    var fresh = 0;
    var source = new EventSource(box.dataset.events);
    source.addEventListener("checkpoint", function (event) {
      var data = JSON.parse(event.data);
      if (data.checkpoint_id === known) return;
      known = data.checkpoint_id;
      fresh += 1;
      if (follow.checked) {
        window.location.search = "?checkpoint=" + encodeURIComponent(data.checkpoint_id);
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
