"""The admin console (DESIGN §14, §15): server-rendered pages under ``/console``.

Jinja2 templates and vendored htmx (``static/``, no CDN, no build step); one module and one
template folder per page group. Pages call the domain services with the same authorisation as the
API (:mod:`hub.authz`), never a repository (an import-linter contract checks it).
"""
