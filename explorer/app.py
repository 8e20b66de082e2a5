"""`panel serve explorer/app.py [--args --root DIR --export-dir DIR]`: the one template and its layout; everything else lives in explorer.ui."""

import sys

import panel as pn

from explorer.ui.memory import release_memory
from explorer.ui.shell import Shell, parse_options

TITLE = "Attention Packet Explorer"
HEADER_BACKGROUND = "#2f3e4e"
SIDEBAR_WIDTH = 430  # the packet table: name, status, max head linf, ratio

# BootstrapTemplate serves every asset from this server: no web fonts, no CDN (the browser tests check it).
pn.extension("tabulator")
pn.config.nthreads = 4  # callbacks and each session's first packet run on threads: no session waits for another's

pn.state.on_session_destroyed(release_memory)
root, export_dir = parse_options(sys.argv[1:])
shell = Shell(root, export_dir)
pn.template.BootstrapTemplate(
    title=TITLE, header_background=HEADER_BACKGROUND, sidebar_width=SIDEBAR_WIDTH,
    sidebar=[shell.sidebar], main=[shell.main],
).servable(title=TITLE)
