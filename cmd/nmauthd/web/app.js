"use strict";
// The demo page of nmauthd. The bearer token is kept in this closure only,
// never in web storage or a cookie, so that no other page or later user of
// this browser can find it; reloading the page logs out.
(() => {
  const $ = (id) => document.getElementById(id);

  let token = "";         // the bearer token of the current session
  let principal = null;   // the last answer of whoami
  let pending = null;     // {userName, preAuthToken} while the code prompt is open
  let enrollment = null;  // the init-totp answer until complete-totp succeeds

  // ApiError is a failed call: the HTTP status (0 when the server was not
  // reached) and the server's message.
  class ApiError extends Error {
    constructor(status, message, retryAfter) {
      super(message);
      this.status = status;
      this.retryAfter = retryAfter;
    }
  }

  async function api(method, path, { bearer, body } = {}) {
    const headers = { Accept: "application/json" };
    const init = { method, headers, cache: "no-store", credentials: "omit", redirect: "error" };
    if (bearer) headers.Authorization = "Bearer " + bearer;
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let resp, text;
    try {
      resp = await fetch(path, init);
      text = await resp.text();
    } catch (err) {
      throw new ApiError(0, "the server could not be reached (" + err.message + ")");
    }
    let data = null;
    try {
      data = JSON.parse(text);
    } catch {
      // Not JSON: a proxy's page, say; its text serves as the message.
    }
    if (!resp.ok) {
      const msg = envelopeMessage(data) || text.trim().slice(0, 200) || resp.statusText || "no message";
      throw new ApiError(resp.status, msg, resp.headers.get("Retry-After"));
    }
    if (data === null || typeof data !== "object") {
      throw new ApiError(resp.status, "the answer is not a JSON object");
    }
    return data;
  }

  // envelopeMessage is the message of an envelope of either wire profile:
  // "message" in the spec's, "Message" in Netmaker's; "" when there is none.
  function envelopeMessage(data) {
    if (data === null || typeof data !== "object") return "";
    for (const key of ["message", "Message"]) {
      if (typeof data[key] === "string" && data[key] !== "") return data[key];
    }
    return "";
  }

  function say(text, kind) {
    const status = $("status");
    status.textContent = text;
    status.className = "message" + (kind ? " " + kind : "");
  }

  function describe(err) {
    if (!(err instanceof ApiError)) return String(err && err.message ? err.message : err);
    if (err.status === 0) return err.message;
    let text = err.message + " (HTTP " + err.status + ")";
    if (err.retryAfter) text += "; try again in " + err.retryAfter + " s";
    return text;
  }

  // run performs one action for a button or form: its buttons are
  // disabled meanwhile, and any failure is shown, never swallowed.
  async function run(container, action, fn) {
    const buttons = container.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    container.setAttribute("aria-busy", "true");
    say("Working…");
    try {
      await fn();
    } catch (err) {
      say(action + " failed: " + describe(err), "error");
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
      container.removeAttribute("aria-busy");
    }
  }

  function userPath(name, action) {
    return "/api/users/" + encodeURIComponent(name) + "/auth/" + action;
  }

  // payload is the object an envelope carries, in either wire profile.
  function payload(env) {
    return (env && (env.response || env.Response)) || {};
  }

  function need(value, what) {
    if (typeof value !== "string" || value === "") throw new Error("the answer has no " + what);
    return value;
  }

  // forget drops every credential and everything shown of the session.
  function forget() {
    token = "";
    principal = null;
    pending = null;
    enrollment = null;
    $("whoami").replaceChildren();
    $("enroll-qr").removeAttribute("src");
    $("enroll-secret").textContent = "";
    $("recovery-codes").replaceChildren();
    $("login-code").value = "";
    $("enroll-code").value = "";
    $("passkey-name").value = "";
    $("passkey-list").tBodies[0].replaceChildren();
    $("token-list").tBodies[0].replaceChildren();
    $("token-secret").textContent = "";
    $("token-name").value = "";
    for (const id of ["session", "code-prompt", "enroll", "enroll-pending", "recovery", "passkeys", "tokens", "token-made"]) $(id).hidden = true;
    $("user-login").hidden = false;
  }

  async function startSession(newToken, message) {
    forget();
    token = newToken;
    await showWhoami();
    say(message, "ok");
  }

  async function showWhoami() {
    let p;
    try {
      p = await api("GET", "/api/whoami", { bearer: token });
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) forget();
      throw err;
    }
    principal = p;
    renderPrincipal(p);
    $("session").hidden = false;
    const isUser = p.kind === "user";
    $("enroll").hidden = !isUser;
    if (isUser && enrollment === null) {
      $("enroll-start").hidden = false;
    }
    if (isUser && passkeysSupported) await loadPasskeys();
    if (isUser) await loadTokens();
  }

  const tokensPath = "/api/v1/users/access_token";

  // loadTokens shows the user's access tokens; a server whose store keeps
  // none (404) hides the section.
  async function loadTokens() {
    let env;
    try {
      env = await api("GET", tokensPath + "?username=" + encodeURIComponent(principal.name), { bearer: token });
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        $("tokens").hidden = true;
        return;
      }
      throw err;
    }
    const list = env.response || env.Response;
    if (!Array.isArray(list)) throw new Error("the answer has no list of tokens");
    $("token-list").tBodies[0].replaceChildren(...list.map((t) => {
      const tr = document.createElement("tr");
      const actions = document.createElement("td");
      const del = document.createElement("button");
      del.type = "button";
      del.className = "secondary";
      del.textContent = "Delete";
      del.dataset.action = "delete";
      del.addEventListener("click", () => onTokenDelete(t.id, t.name));
      actions.append(del);
      let scope = (t.readOnly || t.read_only) ? "read-only" : "read-write";
      if (Array.isArray(t.networks) && t.networks.length > 0) scope += " in " + t.networks.join(", ");
      const used = t.lastUsed || t.last_used;
      tr.append(cell(String(t.name), "name"), cell(scope, "scope"), cell(timeText(t.expiresAt || t.expires_at), "expires"),
        cell(used && !used.startsWith("0001-") ? timeText(used) : "never", "lastUsed"), actions);
      return tr;
    }));
    $("token-none").hidden = list.length > 0;
    $("tokens").hidden = false;
  }

  function onTokenAdd(ev) {
    ev.preventDefault();
    run(ev.currentTarget, "Creating an access token", async () => {
      if (principal === null) throw new Error("log in first");
      const name = $("token-name").value.trim();
      const body = { name, user_name: principal.name, read_only: $("token-read-only").checked };
      const made = payload(await api("POST", tokensPath, { bearer: token, body }));
      $("token-secret").textContent = need(made.authToken || made.AuthToken, "token");
      $("token-made").hidden = false;
      $("token-name").value = "";
      await loadTokens();
      say("Access token " + name + " created.", "ok");
    });
  }

  function onTokenDelete(id, name) {
    run($("tokens"), "Deleting access token " + name, async () => {
      await api("DELETE", tokensPath + "?id=" + encodeURIComponent(id), { bearer: token });
      $("token-made").hidden = true;
      $("token-secret").textContent = "";
      await loadTokens();
      say("Access token " + name + " deleted.", "ok");
    });
  }

  function renderPrincipal(p) {
    const rows = [["Kind", "kind", p.kind]];
    if (p.name) rows.push(["Name", "name", p.name]); // the master key has none
    if (p.network) rows.push(["Network", "network", p.network]);
    if (p.kind === "user") rows.push(["Passed a second factor", "totp", p.totp ? "yes" : "no"]);
    if (p.issuedAt) rows.push(["Issued", "issuedAt", new Date(p.issuedAt).toLocaleString()]);
    if (p.expiresAt) rows.push(["Expires", "expiresAt", new Date(p.expiresAt).toLocaleString()]);
    const items = [];
    for (const [label, field, value] of rows) {
      const dt = document.createElement("dt");
      dt.textContent = label;
      const dd = document.createElement("dd");
      dd.dataset.field = field;
      dd.textContent = String(value);
      items.push(dt, dd);
    }
    $("whoami").replaceChildren(...items);
  }

  function openPrompt(userName, preAuthToken) {
    forget();
    pending = { userName, preAuthToken };
    $("code-prompt-user").textContent = userName;
    $("user-login").hidden = true;
    $("code-prompt").hidden = false;
    $("code-prompt-passkey").hidden = !passkeysSupported;
    $("login-code").focus();
  }

  // groupSecret spaces a base32 secret in groups of four, as authenticator
  // apps accept it and people read it more easily.
  function groupSecret(secret) {
    return secret.replace(/(.{4})(?=.)/g, "$1 ");
  }

  function onUserLogin(ev) {
    ev.preventDefault();
    run(ev.currentTarget, "User login", async () => {
      const env = await api("POST", "/api/users/adm/authenticate", {
        body: { username: $("user-name").value, password: $("user-password").value },
      });
      const r = env.response || {};
      $("user-password").value = "";
      if (r.totpRequired) {
        openPrompt(need(r.userName, "user name"), need(r.preAuthToken, "pre-auth token"));
        say("Password accepted. Enter a code to finish logging in.", "ok");
        return;
      }
      await startSession(need(r.authToken, "token"), "Logged in as " + r.userName + ".");
    });
  }

  function onVerifyCode(ev) {
    ev.preventDefault();
    run(ev.currentTarget, "Code check", async () => {
      if (pending === null) throw new Error("no login is waiting for a code");
      const code = $("login-code").value.replace(/\s+/g, "");
      let r;
      try {
        r = await api("POST", userPath(pending.userName, "verify-totp"), {
          bearer: pending.preAuthToken,
          body: { totp: code },
        });
      } finally {
        $("login-code").value = "";
      }
      let msg = "Logged in as " + r.userName + " with two-factor login.";
      if (typeof r.recoveryCodesLeft === "number") {
        msg += " You used a recovery code: " + r.recoveryCodesLeft + " left.";
      }
      await startSession(need(r.authToken, "token"), msg);
    });
  }

  function onHostLogin(ev) {
    ev.preventDefault();
    run(ev.currentTarget, "Host login", async () => {
      const env = await api("POST", "/api/hosts/adm/authenticate", {
        body: { id: $("host-id").value, macaddress: $("host-mac").value.trim(), password: $("host-password").value },
      });
      const r = env.response || {};
      $("host-password").value = "";
      await startSession(need(r.authToken, "token"), "Logged in as host " + r.id + ".");
    });
  }

  function onEnrollStart() {
    run($("enroll"), "Turning on two-factor login", async () => {
      if (principal === null) throw new Error("log in first");
      const e = await api("POST", userPath(principal.name, "init-totp"), { bearer: token });
      const secret = new URL(need(e.otp_auth_url, "otpauth URL")).searchParams.get("secret");
      if (!secret) throw new Error("the otpauth URL has no secret");
      if (!String(e.qr_code).startsWith("data:image/png;base64,")) throw new Error("the answer has no QR code");
      enrollment = { name: principal.name, url: e.otp_auth_url, signature: need(e.otp_auth_url_signature, "signature") };
      $("enroll-qr").src = e.qr_code;
      $("enroll-secret").textContent = groupSecret(secret);
      $("recovery").hidden = true;
      $("enroll-start").hidden = true;
      $("enroll-pending").hidden = false;
      say("Add the account to your authenticator app, then enter its code.", "ok");
      $("enroll-code").focus();
    });
  }

  function onEnrollComplete(ev) {
    ev.preventDefault();
    run(ev.currentTarget, "Confirming the code", async () => {
      if (enrollment === null) throw new Error("start again with the button above");
      const env = await api("POST", userPath(enrollment.name, "complete-totp"), {
        bearer: token,
        body: {
          otp_auth_url: enrollment.url,
          otp_auth_url_signature: enrollment.signature,
          totp: $("enroll-code").value.replace(/\s+/g, ""),
        },
      });
      $("enroll-code").value = "";
      enrollment = null;
      $("enroll-qr").removeAttribute("src");
      $("enroll-secret").textContent = "";
      $("enroll-pending").hidden = true;
      const codes = (env.response && env.response.recoveryCodes) || [];
      $("recovery-codes").replaceChildren(...codes.map((c) => {
        const li = document.createElement("li");
        li.textContent = c;
        return li;
      }));
      $("recovery").hidden = codes.length === 0;
      say("Two-factor login is on: the next login asks for a code.", "ok");
    });
  }

  function onEnrollCancel() {
    enrollment = null;
    $("enroll-qr").removeAttribute("src");
    $("enroll-secret").textContent = "";
    $("enroll-code").value = "";
    $("enroll-pending").hidden = true;
    $("enroll-start").hidden = false;
    say("Two-factor setup cancelled; nothing was changed.");
  }

  // Passkeys. The browser makes and uses them (navigator.credentials); the
  // server's options and the browser's answers travel as WebAuthn's JSON.
  const passkeysSupported = typeof window.PublicKeyCredential === "function" &&
    typeof PublicKeyCredential.parseCreationOptionsFromJSON === "function";

  // checkRelyingParty refuses, before the browser does with a less helpful
  // error, a page whose address is not under the passkeys' domain.
  function checkRelyingParty(rpId) {
    const host = location.hostname;
    if (host !== rpId && !host.endsWith("." + rpId)) {
      throw new Error("this server's passkeys are for " + rpId + ": open this page at " +
        location.protocol + "//" + rpId + (location.port ? ":" + location.port : "") + "/");
    }
  }

  async function createPasskey(options) {
    const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(options.publicKey);
    checkRelyingParty(publicKey.rp.id);
    const cred = await navigator.credentials.create({ publicKey });
    return cred.toJSON();
  }

  async function getPasskey(options) {
    const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(options.publicKey);
    checkRelyingParty(publicKey.rpId);
    const cred = await navigator.credentials.get({ publicKey });
    return cred.toJSON();
  }

  function passkeyPath(name, rest) {
    return "/api/users/" + encodeURIComponent(name) + "/passkeys" + rest;
  }

  function timeText(t) {
    if (typeof t !== "string" || t === "") return "never";
    return new Date(t).toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });
  }

  // loadPasskeys shows the user's passkeys; a server without passkeys
  // (404) hides the section.
  async function loadPasskeys() {
    let list;
    try {
      list = payload(await api("GET", passkeyPath(principal.name, ""), { bearer: token })).passkeys;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        $("passkeys").hidden = true;
        return;
      }
      throw err;
    }
    if (!Array.isArray(list)) throw new Error("the answer has no passkeys");
    $("passkey-list").tBodies[0].replaceChildren(...list.map((p) => {
      const tr = document.createElement("tr");
      const actions = document.createElement("td");
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "secondary";
      remove.textContent = "Remove";
      remove.dataset.action = "remove";
      remove.addEventListener("click", () => onPasskeyRemove(p.id, p.name));
      actions.append(remove);
      tr.append(cell(String(p.name), "name"), cell(timeText(p.createdAt), "created"),
        cell(timeText(p.lastUsedAt), "lastUsed"), cell(String(p.signCount), "signCount"), actions);
      return tr;
    }));
    $("passkey-none").hidden = list.length > 0;
    $("passkeys").hidden = false;
  }

  function onPasskeyAdd(ev) {
    ev.preventDefault();
    run(ev.currentTarget, "Adding a passkey", async () => {
      if (principal === null) throw new Error("log in first");
      const name = $("passkey-name").value.trim();
      const options = payload(await api("POST", passkeyPath(principal.name, "/register/begin"), { bearer: token, body: { name } }));
      const answer = await createPasskey(options);
      const r = payload(await api("POST", passkeyPath(principal.name, "/register/finish"), { bearer: token, body: answer }));
      $("passkey-name").value = "";
      let msg = "Passkey " + need(r.passkey && r.passkey.name, "passkey") + " added.";
      if (typeof r.authToken === "string" && r.authToken !== "") {
        // The first second factor revoked the session's token.
        token = r.authToken;
        msg += " It is your first second factor: your other sessions are logged out, and the next login asks for it.";
      }
      await showWhoami();
      say(msg, "ok");
    });
  }

  function onPasskeyRemove(id, name) {
    run($("passkeys"), "Removing passkey " + name, async () => {
      await api("POST", passkeyPath(principal.name, "/" + encodeURIComponent(id) + "/remove"), { bearer: token });
      await loadPasskeys();
      say("Passkey " + name + " removed.", "ok");
    });
  }

  // onPasskeyLogin logs in with a discoverable passkey, without password.
  function onPasskeyLogin(ev) {
    run(ev.currentTarget.parentElement, "Passkey login", async () => {
      const options = payload(await api("POST", "/api/users/adm/passkey/begin"));
      const r = payload(await api("POST", "/api/users/adm/passkey/finish", { body: await getPasskey(options) }));
      await startSession(need(r.authToken, "token"), "Logged in as " + r.userName + " with a passkey.");
    });
  }

  // onPasskeySecondFactor answers the code prompt with a passkey.
  function onPasskeySecondFactor(ev) {
    run(ev.currentTarget.parentElement, "Passkey check", async () => {
      if (pending === null) throw new Error("no login is waiting for a second factor");
      const path = "/api/users/" + encodeURIComponent(pending.userName) + "/auth/passkey/";
      const options = payload(await api("POST", path + "begin", { bearer: pending.preAuthToken }));
      const r = payload(await api("POST", path + "finish", { bearer: pending.preAuthToken, body: await getPasskey(options) }));
      await startSession(need(r.authToken, "token"), "Logged in as " + r.userName + " with a passkey as second factor.");
    });
  }

  // showSSO shows the SSO button when the server has single sign-on on.
  async function showSSO() {
    try {
      const resp = await fetch("/api/oauth/enabled", { cache: "no-store", credentials: "omit" });
      $("sso-login").hidden = resp.status !== 204;
    } catch {
      $("sso-login").hidden = true;
    }
  }

  // takeSSOLogin takes the login an SSO callback put in the page's
  // fragment, and removes it from the address bar and the history at once.
  function takeSSOLogin() {
    if (location.hash.length < 2) return;
    const v = new URLSearchParams(location.hash.slice(1));
    history.replaceState(null, "", location.pathname + location.search);
    const user = v.get("userName");
    if (!user) return;
    if (v.get("preAuthToken")) {
      openPrompt(user, v.get("preAuthToken"));
      say("Signed in with SSO. Enter a code to finish logging in.", "ok");
      return;
    }
    if (v.get("authToken")) {
      run($("user-login"), "SSO login", () => startSession(v.get("authToken"), "Logged in as " + user + " with SSO."));
    }
  }

  // onLogout revokes the session's token on the server, then forgets it;
  // the page forgets it even when the server cannot be told.
  function onLogout(ev) {
    run(ev.currentTarget.parentElement, "Logging out", async () => {
      let revoked = false;
      try {
        if (principal && principal.kind === "user") {
          await api("POST", "/api/v1/users/logout", { bearer: token });
          revoked = true;
        }
      } catch (err) {
        // A token the server refuses already (401) needs no revoking.
        if (!(err instanceof ApiError && err.status === 401)) throw err;
      } finally {
        forget();
        $("user-name").focus();
      }
      say(revoked ? "Logged out: the server revoked the token, and this page no longer holds it."
        : "Logged out: this page no longer holds a token.", "ok");
    });
  }

  // The admin view. The master key is kept in this closure only, like the
  // token, and apart from it: logging in or out does not touch it.
  const adminPageSize = 10;
  let adminKey = "";
  // after is the cursor of the page shown ("" for the first), next that of
  // the following page ("" when it is the last).
  const adminPages = { users: { after: "", next: "" }, hosts: { after: "", next: "" } };

  function cell(text, field) {
    const td = document.createElement("td");
    td.textContent = text;
    if (field) td.dataset.field = field;
    return td;
  }

  function lockedText(until) {
    return typeof until === "string" && until !== "" ? new Date(until).toLocaleString() : "no";
  }

  function actionButton(label, kind, name, action) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "secondary";
    b.textContent = label;
    b.dataset.action = action;
    b.addEventListener("click", () => onAdminAction(kind, name, action, label));
    return b;
  }

  function userRow(u) {
    const tr = document.createElement("tr");
    const state = cell(u.disabled ? "disabled" : "enabled", "state");
    if (u.disabled) state.className = "disabled";
    const actions = document.createElement("td");
    actions.append(u.disabled
      ? actionButton("Enable", "users", u.name, "enable")
      : actionButton("Disable", "users", u.name, "disable"));
    if (u.totp) actions.append(actionButton("Reset TOTP", "users", u.name, "totp-reset"));
    actions.append(actionButton("Reset passkeys", "users", u.name, "passkeys-reset"));
    tr.append(cell(String(u.name), "name"), state, cell(u.totp ? "on" : "off", "totp"),
      cell(String(u.recoveryCodesLeft), "recoveryCodes"), cell(lockedText(u.lockedUntil), "locked"), actions);
    return tr;
  }

  function hostRow(h) {
    const tr = document.createElement("tr");
    const state = cell(h.disabled ? "disabled" : "enabled", "state");
    if (h.disabled) state.className = "disabled";
    const actions = document.createElement("td");
    actions.append(h.disabled
      ? actionButton("Enable", "hosts", h.id, "enable")
      : actionButton("Disable", "hosts", h.id, "disable"));
    tr.append(cell(String(h.id), "name"), state, cell(h.macaddress || "any", "mac"),
      cell(lockedText(h.lockedUntil), "locked"), actions);
    return tr;
  }

  // loadAdminPage shows the page of kind ("users" or "hosts") that starts
  // after the cursor after.
  async function loadAdminPage(kind, after) {
    if (adminKey === "") throw new Error("enter the master key first");
    const q = new URLSearchParams({ limit: String(adminPageSize) });
    if (after) q.set("after", after);
    const page = await api("GET", "/api/admin/" + kind + "?" + q, { bearer: adminKey });
    if (!Array.isArray(page.items)) throw new Error("the answer has no items");
    const rows = page.items.map(kind === "users" ? userRow : hostRow);
    $("admin-" + kind).tBodies[0].replaceChildren(...rows);
    adminPages[kind] = { after, next: typeof page.next === "string" ? page.next : "" };
    $("admin-" + kind + "-next").hidden = adminPages[kind].next === "";
    $("admin-" + kind + "-first").hidden = after === "";
  }

  async function loadAdmin() {
    await loadAdminPage("users", adminPages.users.after);
    await loadAdminPage("hosts", adminPages.hosts.after);
  }

  function closeAdmin() {
    adminKey = "";
    $("admin-key").value = "";
    for (const kind of ["users", "hosts"]) {
      $("admin-" + kind).tBodies[0].replaceChildren();
      adminPages[kind] = { after: "", next: "" };
    }
    $("admin-view").hidden = true;
    $("admin-key-form").hidden = false;
  }

  function onAdminOpen(ev) {
    ev.preventDefault();
    run(ev.currentTarget, "Opening the admin view", async () => {
      adminKey = $("admin-key").value;
      $("admin-key").value = "";
      try {
        await loadAdmin();
      } catch (err) {
        closeAdmin();
        throw err;
      }
      $("admin-key-form").hidden = true;
      $("admin-view").hidden = false;
      say("Admin view open.", "ok");
    });
  }

  // adminActionPath is the route of an admin view's button; the passkeys
  // of a user are reset on the passkey routes.
  function adminActionPath(kind, name, action) {
    if (action === "passkeys-reset") return passkeyPath(name, "/reset");
    return "/api/admin/" + kind + "/" + encodeURIComponent(name) + "/" + action;
  }

  function onAdminAction(kind, name, action, label) {
    run($("admin-view"), label + " " + name, async () => {
      const r = await api("POST", adminActionPath(kind, name, action), { bearer: adminKey });
      await loadAdminPage(kind, adminPages[kind].after);
      say((kind === "users" ? "User " : "Host ") + name + ": " + (envelopeMessage(r) || action) + ".", "ok");
    });
  }

  function onAdminPage(kind, first) {
    run($("admin-view"), "Loading the " + kind, async () => {
      await loadAdminPage(kind, first ? "" : adminPages[kind].next);
      say("Showing " + kind + (first ? " from the first." : " after " + adminPages[kind].after + "."), "ok");
    });
  }

  $("admin-key-form").addEventListener("submit", onAdminOpen);
  $("admin-refresh").addEventListener("click", () => {
    run($("admin-view"), "Refreshing the admin view", async () => {
      await loadAdmin();
      say("Admin view refreshed.", "ok");
    });
  });
  $("admin-close").addEventListener("click", () => {
    closeAdmin();
    say("Admin view closed: this page no longer holds the master key.", "ok");
  });
  for (const kind of ["users", "hosts"]) {
    $("admin-" + kind + "-next").addEventListener("click", () => onAdminPage(kind, false));
    $("admin-" + kind + "-first").addEventListener("click", () => onAdminPage(kind, true));
  }

  window.addEventListener("error", (ev) => say("Unexpected error: " + ev.message, "error"));
  window.addEventListener("unhandledrejection", (ev) => say("Unexpected error: " + describe(ev.reason), "error"));

  $("user-login-form").addEventListener("submit", onUserLogin);
  $("code-prompt-form").addEventListener("submit", onVerifyCode);
  $("code-prompt-cancel").addEventListener("click", () => {
    forget();
    say("Login cancelled.");
  });
  $("host-login-form").addEventListener("submit", onHostLogin);
  $("enroll-start").addEventListener("click", onEnrollStart);
  $("enroll-form").addEventListener("submit", onEnrollComplete);
  $("enroll-cancel").addEventListener("click", onEnrollCancel);
  $("logout").addEventListener("click", onLogout);
  $("passkey-add-form").addEventListener("submit", onPasskeyAdd);
  $("token-add-form").addEventListener("submit", onTokenAdd);
  $("passkey-login-start").addEventListener("click", onPasskeyLogin);
  $("code-prompt-passkey").addEventListener("click", onPasskeySecondFactor);
  $("passkey-login").hidden = !passkeysSupported;
  $("sso-login-start").addEventListener("click", () => { window.location.assign("/api/oauth/login"); });
  showSSO();
  takeSSOLogin();
  $("whoami-refresh").addEventListener("click", (ev) => {
    run(ev.currentTarget.parentElement, "Refreshing the session", async () => {
      if (token === "") throw new Error("not logged in");
      await showWhoami();
      say("Session is valid.", "ok");
    });
  });
})();
