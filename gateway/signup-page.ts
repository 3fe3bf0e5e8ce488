// The sign-up page an invitation link opens: Zulip's /accounts/do_confirm/<key>
// (email invitations) and /join/<key>/ (reusable links). Plain
// server-rendered HTML, no script: GET shows a form (full name, password,
// and the email address for a reusable link); the form POSTs to
// /accounts/register/ with the link's key, and the realm actor
// (acceptInvite) checks the key and creates the account with the
// invitation's role, channels and groups in one turn.
//
// CSRF: the only state-changing request is that POST, and it does nothing
// without the key, a secret only the link's holder has; a forged
// cross-site POST cannot know it. Every value written into a page is
// HTML-escaped; the pages carry a CSP that allows no script, no framing and
// form posts to this origin only, and no Referer leaves them (the key is in
// the address).

import { realmRef } from "../actors/index.ts";
import { ZulipError } from "../actors/errors.ts";
import { acceptsHtml, p, param, RawReply, type RouteDef, type RouteRequest } from "./index.ts";

const HEADERS = {
  "cache-control": "no-store",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

/** Longest value of a form field read (names are 100 code points, addresses 320). */
const FIELD_MAX = 1000;

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

function page(title: string, body: string, status = 200): RawReply {
  const html = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>
body { font-family: system-ui, sans-serif; background: #f5f5f5; margin: 0; }
main { max-width: 26rem; margin: 4rem auto; background: #fff; padding: 2rem; border-radius: 8px; box-shadow: 0 1px 4px #0002; }
h1 { font-size: 1.4rem; margin-top: 0; }
label { display: block; margin: 1rem 0 .3rem; font-weight: 600; }
input[type=text], input[type=email], input[type=password] { width: 100%; box-sizing: border-box; padding: .5rem; font-size: 1rem; }
button { margin-top: 1.5rem; padding: .6rem 1.2rem; font-size: 1rem; }
.error { color: #a00; background: #fee; padding: .6rem; border-radius: 4px; }
</style>
</head>
<body><main>
${body}
</main></body>
</html>
`;
  return new RawReply(Buffer.from(html, "utf8"), "text/html; charset=utf-8", HEADERS, status);
}

/**
 * A failure: a page for a browser; for any other client (API tools, the
 * fuzzer) Zulip's JSON error envelope, as every other route answers.
 */
function failure(req: RouteRequest, err: unknown, render: (e: ZulipError) => RawReply): RawReply {
  if (!(err instanceof ZulipError) || !acceptsHtml(req)) throw err;
  return render(err);
}

function errorPage(err: ZulipError): RawReply {
  return page(
    "Invitation link",
    `<h1>This invitation link cannot be used</h1>\n<p class="error" id="error">${esc(err.message)}</p>`,
    err.status,
  );
}

interface FormValues {
  key: string;
  realmName: string;
  /** The invited address; null for a reusable link (the visitor types one). */
  email: string | null;
  typedEmail?: string;
  fullName?: string;
  error?: string;
}

function formPage(v: FormValues, status = 200): RawReply {
  const emailField =
    v.email === null
      ? `<label for="email">Email address</label>
<input type="email" id="email" name="email" required maxlength="320" value="${esc(v.typedEmail ?? "")}">`
      : `<p>Your login email: <b id="invited-email">${esc(v.email)}</b></p>`;
  return page(
    `Join ${v.realmName}`,
    `<h1>Create your account in ${esc(v.realmName)}</h1>
${v.error === undefined ? "" : `<p class="error" id="error">${esc(v.error)}</p>`}
<form method="post" action="/accounts/register/" id="signup">
<input type="hidden" name="key" value="${esc(v.key)}">
${emailField}
<label for="full_name">Full name</label>
<input type="text" id="full_name" name="full_name" required maxlength="100" value="${esc(v.fullName ?? "")}">
<label for="password">Password</label>
<input type="password" id="password" name="password" required autocomplete="new-password">
<button type="submit" id="submit">Sign up</button>
</form>`,
    status,
  );
}

async function showForm(req: RouteRequest): Promise<RawReply> {
  const key = req.path.key ?? "";
  try {
    const info = await req.call(realmRef(req.realmId), "inviteInfo", { key });
    return formPage({ key, realmName: info.realmName, email: info.email });
  } catch (err) {
    return failure(req, err, errorPage);
  }
}

const confirmPage: RouteDef = {
  method: "GET",
  path: "/accounts/do_confirm/:key",
  prefix: "",
  auth: "none",
  params: {},
  handler: showForm,
};

const joinPage: RouteDef = {
  method: "GET",
  path: "/join/:key/",
  prefix: "",
  auth: "none",
  params: {},
  handler: showForm,
};

function field(req: RouteRequest, name: string): string {
  const v = req.params[name];
  return typeof v === "string" ? v.slice(0, FIELD_MAX) : "";
}

const register: RouteDef = {
  method: "POST",
  path: "/accounts/register/",
  prefix: "",
  auth: "none",
  params: {
    key: param(p.string()),
    email: param(p.string()),
    full_name: param(p.string()),
    password: param(p.string()),
  },
  async handler(req) {
    const key = field(req, "key");
    const realm = realmRef(req.realmId);
    let info: { realmName: string; email: string | null };
    try {
      info = await req.call(realm, "inviteInfo", { key });
    } catch (err) {
      return failure(req, err, errorPage);
    }
    const fullName = field(req, "full_name");
    const typedEmail = field(req, "email");
    try {
      const r = await req.call(realm, "acceptInvite", {
        key,
        email: typedEmail,
        fullName,
        password: typeof req.params.password === "string" ? req.params.password : "",
      });
      return page(
        `Welcome to ${info.realmName}`,
        `<h1>Your account is ready</h1>
<p id="done">Welcome to ${esc(info.realmName)}! Log in with <b id="login-email">${esc(r.email)}</b> and the password you chose.</p>
<p><a href="/">Go to ${esc(info.realmName)}</a></p>`,
      );
    } catch (err) {
      return failure(req, err, (e) =>
        // The link went bad meanwhile (used, revoked, expired): the error page.
        e.status === 404
          ? errorPage(e)
          : formPage(
              { key, realmName: info.realmName, email: info.email, typedEmail, fullName, error: e.message },
              e.status,
            ),
      );
    }
  },
};

export const signupRoutes: RouteDef[] = [confirmPage, joinPage, register];
