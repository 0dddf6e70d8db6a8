/**
 * The sign-in page: plain HTML, no script, no inline style, under the same strict CSP as the admin screens.
 * Every value put into it is one of the fixed messages below or a number; nothing from the request.
 */
export const SIGN_IN_CSP = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export const WRONG_TOKEN_TEXT = 'Wrong admin token.';
/** Shown when a sign-in or sign-out form came from a page of another site (refused, 403). */
export const CROSS_SITE_TEXT = 'This form was sent from another site and was refused. Sign in here.';

export interface SignInPageState {
  /** Shown above the form as an alert, e.g. "Wrong admin token." */
  error?: string;
  /** The request already has a valid session: offer the admin and a sign-out button as well. */
  signedIn?: boolean;
}

export function signInPage(state: SignInPageState = {}): string {
  const error = state.error === undefined ? '' : `\n      <p class="error" role="alert">${escapeHtml(state.error)}</p>`;
  const signedIn = state.signedIn
    ? `
    <section aria-labelledby="session-title">
      <h2 id="session-title">You are signed in</h2>
      <p><a href="/admin">Open the admin</a></p>
      <form method="post" action="/admin/sign-out">
        <button type="submit" class="secondary">Sign out</button>
      </form>
    </section>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Sign in · Webhook Triggers admin</title>
  <link rel="stylesheet" href="/admin/sign-in.css">
</head>
<body>
  <main>
    <h1>Webhook Triggers admin</h1>${signedIn}
    <form method="post" action="/admin/sign-in" class="sign-in">${error}
      <label for="token">Admin token</label>
      <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
      <p class="hint">The <code>ADMIN_TOKEN</code> the app was started with (printed at startup when generated).</p>
      <button type="submit">Sign in</button>
    </form>
  </main>
</body>
</html>
`;
}

export const SIGN_IN_CSS = `*, *::before, *::after { box-sizing: border-box; }
html { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a1a1a; background: #f4f5f7; }
body { margin: 0; padding: 1rem; }
main { max-width: 26rem; margin: 3rem auto; padding: 1.5rem; background: #fff; border: 1px solid #d0d4da; border-radius: 8px; }
h1 { font-size: 1.35rem; margin: 0 0 1.25rem; }
h2 { font-size: 1.05rem; margin: 0 0 .5rem; }
section { margin-bottom: 1.25rem; padding-bottom: 1rem; border-bottom: 1px solid #d0d4da; }
label { display: block; font-weight: 600; margin-bottom: .35rem; }
input { display: block; width: 100%; padding: .55rem .6rem; font: inherit; border: 1px solid #6b7280; border-radius: 4px; }
input:focus, button:focus, a:focus { outline: 3px solid #1d4ed8; outline-offset: 2px; }
.hint { font-size: .875rem; color: #4b5563; margin: .4rem 0 1rem; }
button { font: inherit; font-weight: 600; padding: .55rem 1.1rem; border: 0; border-radius: 4px; background: #1d4ed8; color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: #1d4ed8; border: 1px solid #1d4ed8; }
a { color: #1d4ed8; }
.error { margin: 0 0 1rem; padding: .6rem .75rem; border-radius: 4px; background: #fde8e8; color: #8a1c1c; border: 1px solid #f0b4b4; }
`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
