"""rtframework: resource accounting that stays right while instances move."""

__version__ = "0.1.0"
