"""Stage agents: how one stage runs (prompts, adapters for the agent CLIs, retries,
reviews, the watchdog, usage) and whether the agents can run at all (auth, check).

Room 2 of workflow/ (layer 5): may import model/.
"""
