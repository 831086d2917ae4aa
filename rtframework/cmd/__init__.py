"""The ``rtf`` operator CLI (cliff); one module per command family."""
