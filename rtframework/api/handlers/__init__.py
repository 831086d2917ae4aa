"""One module per family of Placement's endpoints; each has ``ROUTES``:
path -> method -> handler."""
