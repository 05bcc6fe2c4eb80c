"""oauth: the hub as an OAuth 2.1 client of upstream MCP servers (DESIGN §9, §15).

Connect once, refresh forever. Module map, one concern each (each docstring cites what it
implements):

- :mod:`~hub.oauth.endpoints`, :mod:`~hub.oauth.schemas`, :mod:`~hub.oauth.service`,
  :mod:`~hub.oauth.repository`, :mod:`~hub.oauth.deps` — the domain slice;
- :mod:`~hub.oauth.flow` — starting an authorization (probe, discovery, registration, URL);
- :mod:`~hub.oauth.callback` — the redirect back: state, ``iss``, the code, the credential;
- :mod:`~hub.oauth.protected_resource` — RFC 9728 discovery and the ``resource`` check;
- :mod:`~hub.oauth.server_metadata` — RFC 8414 / OIDC discovery order and the issuer check;
- :mod:`~hub.oauth.registration` — pre-registered, client ID metadata document, RFC 7591;
- :mod:`~hub.oauth.pkce` — RFC 7636 S256 and the ``state``;
- :mod:`~hub.oauth.scopes` — the MCP scope selection strategy, step-up unions;
- :mod:`~hub.oauth.authorization_request` — RFC 6749 §4.1.1 with RFC 8707, RFC 9207 ``iss``;
- :mod:`~hub.oauth.token_requests` — RFC 6749 §4.1.3/§6 token requests and client auth;
- :mod:`~hub.oauth.refresh` and :mod:`~hub.oauth.worker` — single-flight refresh by lease;
- :mod:`~hub.oauth.http` — every request through the pinned fetcher, one deadline per step;
- :mod:`~hub.oauth.sealed`, :mod:`~hub.oauth.page`, :mod:`~hub.oauth.config`,
  :mod:`~hub.oauth.exceptions`.
"""
