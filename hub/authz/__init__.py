"""May the caller do this? The authorisation dependencies of every route (DESIGN §8).

:mod:`hub.auth` says who is calling; this package decides what the caller may do, in the order of
DESIGN §8: 401 (no valid key) → 404 if the caller's tenant is not ``{t}`` → 403 if the grant
decision is not ``allow`` → (in the service) 404 if the object is absent from ``{t}``. The grant
engine lives in :mod:`hub.grants`, above this package; it reaches the dependencies through the
:class:`~hub.authz.decider.RouteDecider` component the wiring builds, so no domain with routes is
imported here.
"""
