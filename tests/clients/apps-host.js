// A test host of MCP Apps, built on the extension's own host library (AppBridge from
// @modelcontextprotocol/ext-apps), bundled by scripts/mcp-clients for headless Chromium.
// startHost(html) shows the app in a sandboxed frame and connects the bridge to it; every
// tools/call the app makes waits in window.toolCalls until the test (the MCP client)
// answers it with window.toolCalls[n].resolve(result).
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

window.toolCalls = [];
window.hostReady = false;
window.startHost = async function (html) {
  const frame = document.createElement("iframe");
  frame.id = "app";
  frame.setAttribute("sandbox", "allow-scripts allow-forms");
  frame.style.width = "1100px";
  frame.style.height = "800px";
  document.body.appendChild(frame);
  const bridge = new AppBridge(
    null,
    { name: "questions-test-host", version: "1" },
    { serverTools: {} },
  );
  bridge.oninitialized = () => {
    window.hostReady = true;
  };
  bridge.oncalltool = (params) =>
    new Promise((resolve) => {
      window.toolCalls.push({ name: params.name, arguments: params.arguments, resolve });
    });
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.srcdoc = html;
};
