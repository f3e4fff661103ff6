"""Reports: a run's report computed from its columns, the document model it renders from,
the text, Markdown and HTML renderers (with the HTML's SVG charts and assets), and
:func:`report_run`, the API behind ``rolleval report``. Private: the public entry points are
re-exported by ``rolleval``."""
