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
        var cy = cytoscape({
          container: box,
          elements: graph.elements,
          wheelSensitivity: 0.3,
          style: [
            { selector: "node", style: {
              "label": "data(label)", "font-size": 10, "text-valign": "center",
              "background-color": "#d8dee9", "border-width": 1, "border-color": "#4c566a",
              "shape": "round-rectangle", "width": "label", "height": 22, "padding": 6 } },
            { selector: "node.group", style: {
              "background-color": "#f5f7fa", "text-valign": "top", "font-weight": "bold",
              "border-style": "dashed" } },
            { selector: "node.start", style: { "border-width": 3 } },
            { selector: "node.ran", style: { "background-color": "#a3be8c" } },
            { selector: "node.pending", style: { "background-color": "#88c0d0" } },
            { selector: "node.waiting", style: { "background-color": "#ebcb8b" } },
            { selector: "node.failed", style: { "background-color": "#bf616a", "color": "#fff" } },
            { selector: "edge", style: {
              "width": 1, "curve-style": "bezier", "target-arrow-shape": "triangle",
              "line-color": "#81a1c1", "target-arrow-color": "#81a1c1" } }
          ],
          layout: { name: typeof cytoscapeDagre !== "undefined" ? "dagre" : "breadthfirst",
                    rankDir: "LR", nodeSep: 12, rankSep: 40 }
        });
        // a compound (nested workflow) collapses to its box on double click
        cy.on("dbltap", "node.group", function (event) {
          var children = event.target.descendants();
          var hidden = children.length && children[0].style("display") === "none";
          children.style("display", hidden ? "element" : "none");
          event.target.toggleClass("collapsed", !hidden);
        });
        box.dataset.nodes = String(cy.nodes().not(".group").length);
        box.dataset.edges = String(cy.edges().length);
        box.dataset.layoutMs = String(Math.round(performance.now() - started));
        box.dataset.rendered = "true";
        window.plaitGraph = cy;
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
