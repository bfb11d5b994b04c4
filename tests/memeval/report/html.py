"""A tiny HTML reader for report tests (stdlib html.parser): elements, attributes, text."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "br", "input", "img", "link", "hr", "circle", "line", "rect", "path", "polyline"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: list[str] = field(default_factory=list)

    def get(self, name: str) -> str:
        return self.attrs.get(name) or ""

    @property
    def classes(self) -> set[str]:
        return set(self.get("class").split())


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, {k: v or "" for k, v in attrs})
        self.elements.append(el)
        if tag not in VOID:
            self.open.append(el)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i].tag == tag:
                del self.open[i:]
                break

    def handle_data(self, data: str) -> None:
        for el in self.open:
            el.text.append(data)


def parse(html: str) -> list[Element]:
    reader = _Reader()
    reader.feed(html)
    reader.close()
    return reader.elements


def by_id(elements: list[Element], id_: str) -> Element:
    found = [e for e in elements if e.get("id") == id_]
    assert len(found) == 1, f"expected one element #{id_}, found {len(found)}"
    return found[0]


def text_of(el: Element) -> str:
    return " ".join(" ".join(el.text).split())
