"""The web console at ``/console`` on the broker's HTTP server (issue 18; docs/console.md):
static pages (``static/``: HTML, CSS, vanilla JavaScript, an SVG chart; no CDN, nothing to
install) over the admin and REST routes, which hold every datum and check every caller."""
