"""The page's URL query: read from the request as text, written back into the address bar."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

import panel as pn
import param
from panel.custom import JSComponent
from panel.io.location import Location

# A name's bytes that are not UTF-8 (surrogateescape's stand-ins) are percent-encoded as themselves, and read back.
URL_ERRORS = "surrogateescape"


def read_query(search: str) -> dict[str, str]:
    """{name: value} of a URL query ('?'-prefixed or not); a repeated name's last value."""
    return dict(parse_qsl(search.lstrip("?"), errors=URL_ERRORS))


def write_query(query: dict[str, str]) -> str:
    """The '?'-prefixed URL query of {name: value}."""
    return "?" + urlencode(query, errors=URL_ERRORS)


def session_query() -> str:
    """This session's URL query ('?'-prefixed, '' outside a session), from the request's bytes."""
    arguments = pn.state.session_args
    pairs = [(name, values[-1].decode("utf-8", URL_ERRORS)) for name, values in arguments.items() if values]
    return "?" + urlencode(pairs, errors=URL_ERRORS) if pairs else ""


class StringQueryLocation(Location):
    """A Location whose query parameters stay strings (Panel's calls int() on what str.isdigit() accepts: '²')."""

    @property
    def query_params(self) -> dict[str, str]:
        return dict(parse_qsl(self.search[1:], errors=URL_ERRORS))


def page_location() -> Location | bool:
    """The template's Location: a StringQueryLocation of this session's request, or True (Panel's) outside one."""
    document = pn.state.curdoc
    context = document.session_context if document is not None else None
    return StringQueryLocation.from_request(context.request) if context is not None else True


class QueryWriter(JSComponent):
    """Writes `query` into the address bar as it changes (a new history entry when `push` is set, else over the one
    shown; the first write rewrites); draws nothing. Back and Forward set `visited` and count `visits`."""

    query = param.String(default="", doc="The URL query, '?'-prefixed.")
    push = param.Boolean(default=False, doc="The next change of `query` is a new history entry (a new view).")
    visited = param.String(default="", doc="The query of the entry Back or Forward went to.")
    visits = param.Integer(default=0, doc="How many times Back or Forward went to an entry.")

    _esm = """
export function render({ model }) {
  const write = (push) => {
    const url = new URL(window.location.href)
    url.search = model.query
    if (url.href === window.location.href) {
      return
    }
    if (push) {
      window.history.pushState(null, "", url.href)
    } else {
      window.history.replaceState(window.history.state, "", url.href)
    }
  }
  model.on("query", () => write(model.push))
  window.addEventListener("popstate", () => {
    model.visited = window.location.search
    model.visits = model.visits + 1
  })
  write(false)
}
"""
