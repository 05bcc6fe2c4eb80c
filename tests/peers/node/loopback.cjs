// Preloaded (node --require) into server-everything (tests/peers/fixtures.py) and into the
// conformance runner (tests/peers/conformance.py). Both call listen(port) with no host, i.e. on
// every interface; this binds such listeners to HUB_PEER_HOST (default 127.0.0.1) instead, and
// reports the real port (PORT=0 picks a free one) on stderr as "HUB_PEER_LISTENING <port>".
"use strict";
const net = require("node:net");

const originalListen = net.Server.prototype.listen;
net.Server.prototype.listen = function listenOnLoopback(...args) {
  const portOnly =
    (typeof args[0] === "number" || typeof args[0] === "string") &&
    (args.length === 1 || typeof args[1] === "function");
  if (portOnly) {
    args.splice(1, 0, process.env.HUB_PEER_HOST || "127.0.0.1");
  }
  this.once("listening", () => {
    const address = this.address();
    if (address && typeof address === "object") {
      process.stderr.write(`HUB_PEER_LISTENING ${address.port}\n`);
    }
  });
  return originalListen.apply(this, args);
};
