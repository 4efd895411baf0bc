"""Routes for prompt turns, busy input, runtime selection and permission answers.

Layer 6 (surface).
"""

ROUTES = ()
