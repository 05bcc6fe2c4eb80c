// Preloaded (node --require) into server-everything (tests/peers/fixtures.py) and into the
// conformance runner (tests/peers/conformance.py). Both call listen(port) with no host, i.e. on
// every interface; this binds such listeners to HUB_PEER_HOST (default 127.0.0.1) instead, and
// reports the real port (PORT=0 picks a free one) on stderr as "HUB_PEER_LISTENING <port>".
//
// Binding stays synchronous, as it is without a host: node resolves a listen host with
// dns.lookup, asynchronously even for an IP literal, so server.address() would be null right
// after listen() — and the conformance suite's auth mocks read address().port at once. While
// listen() runs, an IP-literal lookup answers itself synchronously.
//
// Names never reach DNS: a lookup of anything but an IP literal or localhost fails at once
// with ENOTFOUND (the conformance mocks fetch the CIMD scenario's https://conformance-test.local
// URL when they stop; the tests must not resolve real names, SECURITY.md "Tests").
"use strict";
const net = require("node:net");
const dns = require("node:dns");

function literalLookup(original) {
  return function lookup(hostname, options, callback) {
    const cb = typeof options === "function" ? options : callback;
    const opts = typeof options === "object" && options !== null ? options : {};
    const family = net.isIP(hostname);
    if (family && typeof cb === "function") {
      if (opts.all) {
        cb(null, [{ address: hostname, family }]);
      } else {
        cb(null, hostname, family);
      }
      return {};
    }
    return original.apply(this, arguments);
  };
}

const realLookup = dns.lookup;
dns.lookup = function loopbackOnlyLookup(hostname, options, callback) {
  const cb = typeof options === "function" ? options : callback;
  const name = String(hostname || "").toLowerCase();
  if (net.isIP(name) || name === "localhost" || name.endsWith(".localhost")) {
    return realLookup.apply(this, arguments);
  }
  const error = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname} (tests: no DNS)`), {
    code: "ENOTFOUND",
    hostname,
  });
  process.nextTick(() => cb(error));
  return {};
};
if (dns.promises && dns.promises.lookup) {
  const realPromiseLookup = dns.promises.lookup;
  dns.promises.lookup = function loopbackOnlyPromiseLookup(hostname, options) {
    const name = String(hostname || "").toLowerCase();
    if (net.isIP(name) || name === "localhost" || name.endsWith(".localhost")) {
      return realPromiseLookup.call(this, hostname, options);
    }
    const error = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname} (tests: no DNS)`), {
      code: "ENOTFOUND",
      hostname,
    });
    return Promise.reject(error);
  };
}

const originalListen = net.Server.prototype.listen;
net.Server.prototype.listen = function listenOnLoopback(...args) {
  const portOnly =
    (typeof args[0] === "number" || typeof args[0] === "string") &&
    (args.length === 1 || typeof args[1] === "function");
  this.once("listening", () => {
    const address = this.address();
    if (address && typeof address === "object") {
      process.stderr.write(`HUB_PEER_LISTENING ${address.port}\n`);
    }
  });
  if (!portOnly) {
    return originalListen.apply(this, args);
  }
  args.splice(1, 0, process.env.HUB_PEER_HOST || "127.0.0.1");
  const lookup = dns.lookup;
  dns.lookup = literalLookup(lookup);
  try {
    return originalListen.apply(this, args);
  } finally {
    dns.lookup = lookup;
  }
};
