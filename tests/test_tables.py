"""The page's sortable tables (profiling/reports/html/tables.py): a cell's value is written
beside its text only where the text does not already say that number, and no empty class."""

from __future__ import annotations

from profiling.reports.html.tables import Cell, Column, Table, number_cell, text_cell


def test_a_row_writes_only_the_values_its_text_does_not_say():
    table = Table("t", [Column("name", text=True), Column("a"), Column("b"), Column("c"),
                        Column("d"), Column("e")])
    table.add([text_cell("conv"), number_cell(0.2, digits=2), number_cell(0.0703419),
               number_cell(None), Cell("0.00892\u20130.00993", 0.009), number_cell(3.2e-5)],
              key="conv#0", name="conv", depth=1)
    row = table.render().split("<tbody>")[1]
    assert row == ('<tr data-key="conv#0" data-name="conv" data-depth="1">'
                   '<td class="text">conv</td>'
                   '<td>0.20</td>'  # reads as 0.2: sorted by its text
                   '<td data-value="0.0703419">0.0703</td>'  # rounded: its value written
                   '<td>-</td>'
                   '<td data-value="0.009">0.00892\u20130.00993</td>'  # not a number
                   '<td>0.0000320</td>'
                   '</tr></tbody></table></div>')
    head = table.render().split("<thead>")[1].split("</thead>")[0]
    assert head.startswith('<tr><th class="text" title="">name</th><th title="">a</th>')
