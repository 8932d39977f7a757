"""Landing through a forge [F1] [F2]: a task's judged squash proposed as a
pull (merge) request on GitHub, GitLab or Gitea/Forgejo, and read back.

One small module per forge (``github``, ``gitlab``, ``gitea``) behind one
interface (``model.Forge``: open or find a request for git-harn's landing
branch, read its state, ask for auto-merge); ``choose`` picks one by name or
by the remote's URL; ``propose`` is the entry point a caller uses
(``propose`` and ``proposal_state``); ``content`` tells, with no forge at
all, whether the base took the squash (its trailer and tree, or its
patch-id). Tokens (``tokens``) are the operator's: read from the
environment or ``gh auth token``, sent only in an HTTP header to the forge,
and scrubbed from every text that leaves this package [T5].

Layer 3: may import the git layer and the shared helpers; pushes go through
the git layer's one remote door.
"""
