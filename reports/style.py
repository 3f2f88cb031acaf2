"""The page stylesheet: screen, and print on A4/Letter landscape without cut-off tables."""

PAGE_CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
  color: #1b1f24; background: #fff; margin: 0 auto; max-width: 1600px; padding: 1.5rem;
  line-height: 1.45; font-size: 15px; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.25rem; border-bottom: 2px solid #d0d7de; padding-bottom: .2rem; }
.subtitle { color: #57606a; margin: 0 0 .75rem; }
nav ul { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .25rem 1rem; }
nav a { color: #0b5cad; }
section.block { margin: 2rem 0; }
table { border-collapse: collapse; width: 100%; font-size: .85rem; margin: .5rem 0 1rem; }
th, td { border-bottom: 1px solid #d8dee4; padding: .3rem .45rem; vertical-align: top; }
th { background: #f3f5f7; text-align: left; }
.table-wrap { overflow-x: auto; }
td.text { white-space: nowrap; }
td.wrap { white-space: normal; overflow-wrap: anywhere; min-width: 5rem; max-width: 16rem; }
td.prose { white-space: normal; min-width: 12rem; max-width: 20rem; overflow-wrap: break-word; }
td.words { white-space: normal; min-width: 8rem; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
tr.needs-mapping td { background: #fff4cc; font-weight: 600; }
.empty, .notice { background: #f6f8fa; border-left: 4px solid #8c959f; padding: .5rem .75rem; }
.caption { color: #57606a; font-size: .85rem; }
section.block.compact { margin: 1rem 0; }
.note { background: #f3f8ff; border-left: 4px solid #0b5cad; padding: .5rem .9rem; }
.figure { width: 720px; max-width: 100%; overflow-x: auto; }
.delta { color: #57606a; font-size: .8rem; }
.figure-row { display: flex; flex-wrap: wrap; gap: 1rem; }
@media print {
  /* landscape on whatever paper the printer has: A4 (277 mm usable) and Letter (259 mm)
     both fit a 720 px (190 mm) figure and a full-width table */
  @page { size: landscape; margin: 10mm; }
  body { max-width: none; padding: 0; font-size: 10pt; background: #fff; color: #000; }
  nav { display: none; }
  section.block { margin: 0; }
  section.block + section.block { break-before: page; }
  section.block + section.block.compact { break-before: auto; }
  h2 { break-after: avoid; }
  table { font-size: 7.5pt; width: 100%; table-layout: auto; }
  .table-wrap { overflow: visible; }
  /* no cut-off columns: every cell may wrap on paper, long names anywhere */
  td.text, td.num, th { white-space: normal; }
  td.wrap, td.prose, td.words { max-width: none; min-width: 0; }
  th, td { padding: .15rem .25rem; }
  a { color: #000; text-decoration: none; }
  thead { display: table-header-group; }
  tr { break-inside: avoid; }
  th, .note, .empty, .notice, tr.needs-mapping td { background: #fff !important; }
  tr.needs-mapping td { border-top: 1.5px solid #000; border-bottom: 1.5px solid #000; }
  .figure { width: 720px; max-width: none; overflow: visible; break-inside: avoid; }
  .modebar-container { display: none !important; }
}
"""
