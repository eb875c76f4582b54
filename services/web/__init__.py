"""The operators' and engineers' web app (issue 12): ``linewatch serve web``. See docs/web.md."""
