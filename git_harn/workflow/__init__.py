"""The workflow runner: roadmap tasks driven through stage agents, gates,
dual review and integration, each step checked by the host [R1].

Layer 5: may import integrate/, assess/, tasks/, workspace/, store/, git/ and
the shared helpers. There is no adapter module in between: each module
imports what it uses from where it lives.

Its modules live in rooms, ranked; a room imports only from rooms below it
(tests/test_layout.py keeps it so): model/ (1), agents/ (2), ledger/ (3),
task/ (4), after/ (5), page/ (6), run/ (7).
"""
