"""`panel serve explorer/app.py [--args --root DIR --export-dir DIR]`.

The one template and its layout; everything else lives in explorer.ui.
"""

import sys

import panel as pn
import panel.io.resources as panel_resources
from bokeh.models import CustomJS

from explorer.ui import batch
from explorer.ui.arrival import install_arrival_pool
from explorer.ui.closed import quiet_closed_clients
from explorer.ui.memory import release_memory
from explorer.ui.shell import open_session, parse_options
from explorer.ui.timings import SessionTimings, log_info_lines
from explorer.ui.url import page_location

timings = SessionTimings()  # the script runs once per page request: the session's clock starts here

TITLE = "Attention Packet Explorer"
HEADER_BACKGROUND = "#2f3e4e"
SIDEBAR_WIDTH = 430  # the packet table: name, status, max head linf, ratio
DOCS_HINT = (
    "<span class='docs-hint' style='font-size:0.85em;color:#dfe6ee'>Packet rules and report keys: "
    "<code style='color:#ffffff'>docs/</code> in the repository</span>"
)
# The whole page grows and scrolls (not BootstrapTemplate's viewport-high pane), so a full-page screenshot holds the
# whole view; the top bar scrolls too (a sticky one was stamped over such screenshots); min-width 0 keeps the main
# column beside the sidebar (else as wide as its widest plot's minimum, wrapped below it).
PAGE_SCROLL_CSS = """
#container.vh-100 { height: auto !important; min-height: 100vh; overflow: visible !important; }
#content.overflow-hidden { height: auto; overflow: visible !important; flex: 1 0 auto; }
#main.mh-100 { max-height: none !important; overflow: visible; min-width: 0; }
#sidebar { height: auto; overflow: visible; }
#header.sticky-top { position: relative !important; }
"""

# A page whose server went away (stopped, or a --num-procs child restarted) says so when Bokeh's client fires
# `connection_lost` (else a clicked tab never opened, an export note spun for good); set as text, never as HTML.
SERVER_GONE_NOTICE = (
    "This page lost its connection to the explorer's server (it stopped or restarted): nothing you click here "
    "is done any more. Reload the page to continue."
)
SERVER_GONE_JS = """
if (document.querySelector('.server-gone')) { return; }
const notice = document.createElement('div');
notice.className = 'server-gone';
notice.setAttribute('role', 'alert');
notice.style.cssText = 'position:fixed;top:0;left:0;right:0;z-index:10000;padding:0.8em 1.2em;font-size:1.05em;' +
  'background:#fff3cd;color:#4d3800;border-bottom:2px solid #b58900;';
notice.textContent = text;
document.body.appendChild(notice);
"""

pn.extension()  # BootstrapTemplate serves every asset from this server: no web fonts, no CDN
# Panel adds Bokeh's MathJax bundle (1.8 MB of JavaScript, 0.1-0.3 s of browser CPU per page) to any page holding an
# HTML pane, in case its text is TeX; no text of the explorer is (Bokeh still adds it for a model that needs it).
panel_resources._panel_use_mathjax = lambda roots: False
pn.config.nthreads = 4  # callbacks and each session's first packet run on threads: no session waits for another's
install_arrival_pool()  # a session's clicks handled in the order they arrived (explorer.ui.arrival)
batch.install()  # an action's page changes reach the browser as one message (explorer.ui.batch)

log_info_lines()
quiet_closed_clients()  # a browser closed mid-update: one log line, not a traceback
pn.state.on_session_destroyed(release_memory)
pn.state.curdoc.js_on_event("connection_lost", CustomJS(args={"text": SERVER_GONE_NOTICE}, code=SERVER_GONE_JS))
root, export_dir = parse_options(sys.argv[1:])
sidebar, main = open_session(root, export_dir, on_status=timings.status_shown)
pn.template.BootstrapTemplate(
    title=TITLE,
    header_background=HEADER_BACKGROUND,
    sidebar_width=SIDEBAR_WIDTH,
    sidebar=[sidebar],
    main=[main],
    header=[pn.pane.HTML(DOCS_HINT, margin=(0, 10))],
    raw_css=[PAGE_SCROLL_CSS],
    # No busy spinner: Panel's is one flag for the whole server, each flip a message to every open page (12% of the
    # server's busy time with 8 pages open); the app shows its own progress where work runs.
    busy_indicator=None,
).servable(title=TITLE, location=page_location())  # query parameters kept as strings
timings.document_built()
