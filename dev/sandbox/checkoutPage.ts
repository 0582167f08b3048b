import { formatMinor } from './money';
import type { PaymentRecord } from './state';

function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
  body { font-family: system-ui, sans-serif; background: #f4f5f7; margin: 0; }
  main { max-width: 26rem; margin: 4rem auto; background: #fff; border-radius: 8px; padding: 2rem;
         box-shadow: 0 1px 4px rgba(0,0,0,.12); }
  .amount { font-size: 2rem; font-weight: 600; margin: .5rem 0 1rem; }
  .note { color: #555; }
  form { display: inline-block; margin-right: .5rem; }
  button { font-size: 1rem; padding: .6rem 1.4rem; border-radius: 6px; border: 1px solid #888; cursor: pointer; }
  button.pay { background: #1f6feb; color: #fff; border-color: #1f6feb; }
</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

/** The hosted page the customer is sent to: amount, description, Pay and Decline. */
export function renderCheckoutPage(payment: PaymentRecord): string {
  const id = encodeURIComponent(payment.id);
  const amount = `${formatMinor(payment.amountMinor, payment.currency)} ${payment.currency}`;
  const setup = payment.mode === 'setup';
  const lines = [
    `<h1>${setup ? 'Save your card' : 'Complete your payment'}</h1>`,
    `<p class="note">Sandbox payment provider: test mode, no real money moves.</p>`,
    `<p class="amount">${escapeHtml(amount)}</p>`,
  ];
  if (payment.description) lines.push(`<p class="description">${escapeHtml(payment.description)}</p>`);
  if (setup) {
    lines.push('<p>Paying authorizes your card and saves it for future charges by this merchant.</p>');
  } else if (payment.saveCard) {
    lines.push('<p>Your card will be saved for future payments.</p>');
  }
  if (payment.status === 'pending') {
    lines.push(
      `<form method="post" action="/checkout/${id}/pay"><button class="pay" type="submit">Pay</button></form>`,
      `<form method="post" action="/checkout/${id}/decline"><button type="submit">Decline</button></form>`,
    );
  } else {
    lines.push(`<p class="status">This payment has already ${escapeHtml(payment.status)}.</p>`);
  }
  return layout(setup ? 'Save your card' : 'Checkout', lines.join('\n'));
}

/**
 * The authentication (3-D Secure) page of a charge awaiting its customer: Authenticate and Fail,
 * forms posting to `<page>/authenticate` and `<page>/fail`.
 */
export function renderAuthenticationPage(payment: PaymentRecord): string {
  const id = encodeURIComponent(payment.id);
  const amount = `${formatMinor(payment.amountMinor, payment.currency)} ${payment.currency}`;
  const lines = [
    '<h1>Confirm your payment</h1>',
    `<p class="note">Sandbox payment provider: test mode, no real money moves.</p>`,
    '<p>Your bank asks you to confirm this payment (3-D Secure).</p>',
    `<p class="amount">${escapeHtml(amount)}</p>`,
  ];
  if (payment.description) lines.push(`<p class="description">${escapeHtml(payment.description)}</p>`);
  lines.push(
    `<form method="post" action="/authenticate/${id}/authenticate"><button class="pay" type="submit">Authenticate</button></form>`,
    `<form method="post" action="/authenticate/${id}/fail"><button type="submit">Fail</button></form>`,
  );
  return layout('Confirm your payment', lines.join('\n'));
}

/** A short HTML answer for a browser (unknown or canceled checkout). */
export function renderMessagePage(title: string, message: string): string {
  return layout(title, `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>`);
}
