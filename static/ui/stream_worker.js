// The SharedWorker that holds the browser's one live event stream for every tab of this
// site (stream_hub.js says how). A tab connects, says hello with the event names it
// listens for, and says bye when it goes; a tab that vanishes without a word is dropped
// the first time a message to it fails.

import { StreamHub } from "./stream_hub.js";

const hub = new StreamHub();

globalThis.onconnect = (e) => {
  const port = e.ports[0];
  const tab = { send: (msg) => port.postMessage(msg) };
  port.onmessage = (m) => {
    const msg = m.data || {};
    if (msg.type === "hello") hub.join(tab, msg.names || []);
    else if (msg.type === "names") hub.addNames(msg.names || []);
    else if (msg.type === "bye") hub.leave(tab);
    else if (msg.type === "online") hub.online();
    else if (msg.type === "offline") hub.offline();
  };
  port.start();
};
