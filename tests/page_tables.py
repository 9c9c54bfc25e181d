"""Read a report page's tables back as the tests compare them with the other faces."""

from __future__ import annotations

import html
import re

from profiling.reports.html.page import shown_html

__all__ = ["page_rows"]


def page_rows(page: str, table_id: str) -> list[tuple[str, dict[str, str]]]:
    """A page table's rows: ``(data-name, {header: data-value, else the cell's text})``, each
    cell's text also under ``"{header} text"`` (a packed table read as the browser shows it)."""
    page = shown_html(page)
    table = page[page.index(f'id="{table_id}"'):]
    table = table[:table.index("</table>")]
    headers = [html.unescape(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", table)]
    rows = []
    for attributes, cells in re.findall(r"<tr([^>]*)>(.*?)</tr>", table.split("<tbody>")[1]):
        name = html.unescape(re.search(r'data-name="([^"]*)"', attributes).group(1))
        values = [(value, html.unescape(text)) for value, text in
                  re.findall(r'<td[^>]*?(?: data-value="([^"]*)")?>(.*?)</td>', cells)]
        rows.append((name, {header: value or text for header, (value, text)
                            in zip(headers, values)}
                     | {f"{header} text": text for header, (_, text) in zip(headers, values)}))
    return rows
