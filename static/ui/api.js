// Every call to the flock's HTTP API goes through here. An error always becomes an
// ApiError whose message is the server's own `message` (the contract's error body), or a
// plain sentence when the server could not be reached, so pages can show it in words.

export class ApiError extends Error {
  constructor(status, message, body = {}) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.body = body;
  }
}

// Set once this page is on its way out (the owner logged out, or followed a link): a 401
// answering a request still in flight must not start a second navigation to /login that
// aborts the one already under way.
let leaving = false;
if (typeof window !== "undefined") {
  window.addEventListener("beforeunload", () => { leaving = true; });
  window.addEventListener("pagehide", () => { leaving = true; });
  document.addEventListener("submit", (event) => {
    if (event.target instanceof HTMLFormElement && event.target.classList.contains("logout-form")) leaving = true;
  });
}

export async function api(method, path, body) {
  const init = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, "Could not reach the flock: the server is not answering. Check that it is running, then try again.");
  }
  if (response.status === 401 && !leaving && typeof location !== "undefined" && location.pathname !== "/login") {
    // The owner token is set and this browser's login cookie is missing or stale
    // (docs/SECURITY.md): log in again, then come back here. The login page itself reads
    // the waiting count too (the nav of every page); it stays where it is.
    location.assign(`/login?next=${encodeURIComponent(location.pathname)}`);
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const message = data && typeof data.message === "string" && data.message
      ? data.message
      : `The server answered ${response.status} ${response.statusText || ""}`.trim();
    throw new ApiError(response.status, message, data || {});
  }
  return data;
}

export const get = (path) => api("GET", path);
export const post = (path, body) => api("POST", path, body ?? {});

// An endpoint that is not there yet (another part of the flock still being built) answers
// 404 with {"message": "no such endpoint: ..."}; pages degrade instead of erroring.
export function isMissingEndpoint(err) {
  return err instanceof ApiError && err.status === 404 && /no such endpoint/i.test(err.message);
}
