"""The morning report: a workflow run as one page a person can look at
(``git harn workflow report``).

``chart`` reads the record into the timeline's rows, bars and waits (times
only, no HTML); ``render`` turns the record and that chart into one
self-contained HTML file (inline CSS and SVG, no script, every string from
the record escaped by one function); ``write`` is the domain entry point:
it reads the record, lists the run's stage files, writes the page and
opens it when asked.

Room 6 of workflow/ (layer 5): may import model/ and ledger/ (the record and
the result it draws) and the shared helpers; only run/ is above it.
"""
