"""What a person looks at of a workflow run: the morning report, one page
(``git harn workflow report``), and the live view of a run in progress
(``git harn workflow watch``).

``chart`` reads the record into the timeline's rows, bars and waits (times
only, no HTML); ``render`` turns the record and that chart into one
self-contained HTML file (inline CSS and SVG, no script, every string from
the record escaped by one function); ``write`` is the domain entry point:
it reads the record, lists the run's stage files, writes the page and
opens it when asked. ``watch`` follows a running record and its run
folder, reading only what changed at each look, and puts each look into
words (``Frame``); the command draws them on a terminal or a pipe.

Room 6 of workflow/ (layer 5): may import model/ and ledger/ (the record and
the result it draws) and the shared helpers; only run/ is above it.
"""
