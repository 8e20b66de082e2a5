"""The offline export of every kind of result: page, PNGs, JSON and findings, written all or none.

`pages` runs the one flow; `kinds` describes the four kinds, `static_page` assembles the page, `browser` draws its PNGs
(`split` cuts a tall one), `files` names and writes them, `findings` lays out NAME.findings.md.
"""
