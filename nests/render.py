"""Answers, and the owner's own messages, as the owner reads them: Markdown rendered on
the server, then sanitised; bare http(s) URLs become links.

markdown-it-py parses CommonMark (tables and strikethrough on; raw HTML off, so a crow
cannot inject markup), and nh3 (the Ammonia sanitiser) keeps only the tags a reading
view needs. Links open in a new tab with `rel="noopener noreferrer"`; only http, https
and mailto links survive. The pages put this HTML in place as it is: it is the one
server-made markup they insert (docs/REVIEW.md "Answers worth reading").
"""

from __future__ import annotations

import re
from functools import lru_cache

import nh3
from markdown_it import MarkdownIt

ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li",
    "a", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "code": {"class"}, "ol": {"start"}}
# A table column's alignment, as a class the stylesheet knows (ui/crows.css): the pages'
# Content-Security-Policy allows no inline style (docs/SECURITY.md).
ALIGN_CLASSES = {"left": "align-left", "center": "align-center", "right": "align-right"}
ALLOWED_CLASSES = {"th": set(ALIGN_CLASSES.values()), "td": set(ALIGN_CLASSES.values())}
# A long answer renders once per read; caching by text keeps the review queue cheap.
CACHE_SIZE = 512


# A bare http(s) URL in running text (not already a link's target or an autolink): it
# becomes a CommonMark autolink, so it renders as a link like any other.
_BARE_URL = re.compile(r"(?<![<(\[\"'=/\w])https?://[^\s<>()\[\]]*[^\s<>()\[\].,;:!?'\"*_]")
# Code keeps its text: fenced blocks and inline code spans are left alone.
_CODE = re.compile(r"(^```.*?^```[ \t]*$|^~~~.*?^~~~[ \t]*$|`[^`\n]+`)", re.MULTILINE | re.DOTALL)


def linkify(text: str) -> str:
    """Bare URLs outside code, wrapped as autolinks (`<https://…>`)."""
    parts = _CODE.split(text)
    # split() with one group: even indexes are prose, odd ones the code it kept apart.
    return "".join(_BARE_URL.sub(lambda m: f"<{m.group(0)}>", part) if i % 2 == 0 else part for i, part in enumerate(parts))


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["table", "strikethrough"])


@lru_cache(maxsize=CACHE_SIZE)
def render_markdown(text: str) -> str:
    """Safe HTML for a Markdown answer or owner message, bare URLs made links (an empty
    string for an empty text)."""
    if not text or not text.strip():
        return ""
    parser = _parser()
    env: dict = {}
    tokens = parser.parse(linkify(text), env)
    for token in tokens:
        # markdown-it aligns a column with style="text-align:…"; a class says the same.
        if token.type in ("th_open", "td_open") and (style := token.attrGet("style")):
            token.attrs.pop("style", None)
            align = ALIGN_CLASSES.get(str(style).removeprefix("text-align:").strip())
            if align:
                token.attrSet("class", align)
    html = parser.renderer.render(tokens, parser.options, env)
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        allowed_classes=ALLOWED_CLASSES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
        set_tag_attribute_values={"a": {"target": "_blank"}},
    )
