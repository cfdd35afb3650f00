from functrax.scipy import linalg, optimize  # noqa: F401
