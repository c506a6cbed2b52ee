// A line chart of rates over time, drawn as SVG (no library): RelaymqChart.render(svg, series).
// series: [{name, className, points: [number, ...]}], one point per sample, newest last.
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const WIDTH = 600, HEIGHT = 200, LEFT = 48, BOTTOM = 20, TOP = 8;

  function element(name, attributes) {
    const node = document.createElementNS(NS, name);
    for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
    return node;
  }

  function niceMaximum(value) {
    if (value <= 0) return 1;
    const power = Math.pow(10, Math.floor(Math.log10(value)));
    for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
    return 10 * power;
  }

  function render(svg, series, capacity) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    svg.setAttribute("viewBox", `0 0 ${WIDTH} ${HEIGHT}`);
    const highest = Math.max(0, ...series.flatMap((s) => s.points));
    const top = niceMaximum(highest);
    const plotWidth = WIDTH - LEFT - 4, plotHeight = HEIGHT - BOTTOM - TOP;
    for (let i = 0; i <= 4; i++) {
      const y = TOP + plotHeight - (plotHeight * i) / 4;
      svg.appendChild(element("line", {x1: LEFT, x2: WIDTH - 4, y1: y, y2: y, stroke: "#e3e7ec"}));
      const label = element("text", {x: LEFT - 6, y: y + 4, "text-anchor": "end", "font-size": 10, fill: "#5f6b7a"});
      label.textContent = String(Math.round(((top * i) / 4) * 10) / 10);
      svg.appendChild(label);
    }
    const caption = element("text", {x: LEFT, y: HEIGHT - 4, "font-size": 10, fill: "#5f6b7a"});
    caption.textContent = "messages per second, last " + capacity + " samples";
    svg.appendChild(caption);
    const colours = {in: "#1f6feb", out: "#e67e22"};
    for (const s of series) {
      if (s.points.length === 0) continue;
      const offset = capacity - s.points.length;
      const coordinates = s.points.map((value, i) => {
        const x = LEFT + (plotWidth * (offset + i)) / Math.max(1, capacity - 1);
        const y = TOP + plotHeight - (plotHeight * value) / top;
        return `${x.toFixed(1)},${y.toFixed(1)}`;
      });
      svg.appendChild(element("polyline", {points: coordinates.join(" "), fill: "none",
        stroke: colours[s.className] || "#333", "stroke-width": 2, "data-series": s.name}));
    }
  }

  window.RelaymqChart = {render: render};
})();
