"""``git harn demo``: the main job on a throwaway repository it makes itself.

Layer 6: may import any domain package below the commands.
"""
