// The sandbox's chat page: plain browser JavaScript, no build step. Reads the live state from
// GET /_sandbox/events (server-sent events) and acts through the control API (/_sandbox/...).
'use strict';

const STATUSES = ['sent', 'delivered', 'read', 'failed'];
let state = null;
/** The open conversation: { number: phone_number_id, contact: E.164, name }. */
let current = null;
/** Conversations opened on the page that have no message yet. */
const drafts = [];

const $ = (id) => document.getElementById(id);

/** An element with attributes and children; text goes through textContent, never HTML. */
function el(tag, attributes = {}, ...children) {
	const node = document.createElement(tag);
	for (const [name, value] of Object.entries(attributes)) {
		if (value === undefined || value === null || value === false) continue;
		if (name === 'text') node.textContent = value;
		else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
		else node.setAttribute(name, value === true ? '' : value);
	}
	for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child);
	return node;
}

const time = (timestamp) => (timestamp ? timestamp.slice(11, 19) : '');
const kib = (bytes) => (bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KiB`);

function numberLabel(phoneNumberId) {
	const number = state.numbers.find((n) => n.phone_number_id === phoneNumberId);
	return number ? `${number.display_number} (${phoneNumberId})` : phoneNumberId;
}

/** Every message of the account as one timeline entry: inbound, echo (business app) and replies (API). */
function timeline() {
	const entries = [];
	for (const record of state.inbound) {
		if (record.direction === 'in') {
			entries.push({ kind: 'in', number: record.number, contact: record.from, name: record.contact_name, record, at: record.created_at });
		} else {
			entries.push({ kind: 'echo', number: record.number, contact: record.to, record, at: record.created_at });
		}
	}
	for (const message of state.messages) {
		entries.push({ kind: 'out', number: message.from, contact: message.to, record: message, at: message.created_at });
	}
	return entries.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}

/** Conversations per business number, newest activity first. */
function conversations(entries) {
	const byKey = new Map();
	for (const entry of entries) {
		const key = `${entry.number}|${entry.contact}`;
		const conversation = byKey.get(key) ?? { number: entry.number, contact: entry.contact, name: '', last: null };
		if (entry.name) conversation.name = entry.name;
		conversation.last = entry;
		byKey.set(key, conversation);
	}
	for (const draft of drafts) {
		const key = `${draft.number}|${draft.contact}`;
		if (!byKey.has(key)) byKey.set(key, { ...draft, last: null });
	}
	return [...byKey.values()].sort((a, b) => ((b.last?.at ?? '~') > (a.last?.at ?? '~') ? 1 : -1));
}

const sameConversation = (a, b) => a && b && a.number === b.number && a.contact === b.contact;

function preview(entry) {
	if (!entry) return 'no message yet';
	const who = entry.kind === 'in' ? '' : entry.kind === 'echo' ? 'App: ' : 'Reply: ';
	return who + (entry.record.text || `[${entry.record.type}]`);
}

function renderConversations(list) {
	const container = $('conversations');
	container.replaceChildren();
	for (const number of state.numbers) {
		const mine = list.filter((c) => c.number === number.phone_number_id);
		if (mine.length === 0) continue;
		container.append(
			el(
				'div',
				{ class: 'number-group', 'data-number': number.phone_number_id },
				el('h3', { text: `${number.display_number} · ${number.phone_number_id}` }),
				mine.map((c) =>
					el(
						'button',
						{
							type: 'button',
							class: 'conversation',
							'data-number': c.number,
							'data-contact': c.contact,
							'aria-current': sameConversation(c, current) ? 'true' : 'false',
							onclick: () => open({ number: c.number, contact: c.contact, name: c.name }),
						},
						el('div', { class: 'who', text: c.name ? `${c.name} ${c.contact}` : c.contact }),
						el('div', { class: 'last', text: preview(c.last) }),
					),
				),
			),
		);
	}
	if (!container.children.length) container.append(el('p', { class: 'hint', text: 'No conversation yet.' }));
	const select = $('new-number');
	if (select.options.length !== state.numbers.length) {
		select.replaceChildren(...state.numbers.map((n) => el('option', { value: n.phone_number_id, text: `${n.display_number} (${n.phone_number_id})` })));
	}
}

function mediaLine(record) {
	if (!record.media_id) return null;
	const media = state.media.find((m) => m.id === record.media_id);
	const parts = [record.media_mime || media?.mime || record.type];
	if (media) parts.unshift(media.filename), parts.push(kib(media.size));
	return el('div', { class: 'media', 'data-media-id': record.media_id, text: `Attachment: ${parts.join(' · ')}` });
}

function statusControls(message) {
	return el(
		'span',
		{ class: 'set-status' },
		STATUSES.filter((s) => s !== message.status).map((status) =>
			el('button', { type: 'button', 'data-set-status': status, title: `Post a message.status "${status}" event`, text: status, onclick: () => setStatus(message.id, status) }),
		),
	);
}

function renderChat(entries) {
	const list = $('messages');
	const composer = $('composer');
	if (!current) {
		list.replaceChildren();
		composer.hidden = true;
		return;
	}
	composer.hidden = false;
	const mine = entries.filter((e) => sameConversation(e, current));
	const named = [...mine].reverse().find((e) => e.name);
	if (named) current.name = named.name;
	$('chat-title').textContent = current.name ? `${current.name} ${current.contact}` : current.contact;
	$('chat-subtitle').textContent = `with ${numberLabel(current.number)}`;
	if (!$('contact-name').value && current.name) $('contact-name').value = current.name;
	const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
	list.replaceChildren(
		...mine.map((entry) => {
			const { record } = entry;
			const meta = el('div', { class: 'meta' }, el('span', { text: time(entry.at) }));
			if (entry.kind === 'in') meta.prepend(el('span', { text: record.contact_name || record.from }));
			if (entry.kind === 'echo') meta.prepend(el('span', { text: 'business app (echo)' }));
			if (entry.kind === 'out') {
				meta.prepend(el('span', { text: 'workflow reply' }));
				meta.append(el('span', { class: 'status', 'data-status': record.status, text: record.status }));
				if (record.status === 'failed' && record.error) meta.append(el('span', { class: 'error', text: record.error.message ?? JSON.stringify(record.error) }));
				meta.append(statusControls(record));
			}
			return el(
				'li',
				{ class: `bubble ${entry.kind}`, 'data-kind': entry.kind, 'data-id': record.id },
				mediaLine(record),
				record.text ? el('div', { class: 'text', text: record.text }) : null,
				meta,
			);
		}),
	);
	if (mine.length === 0) list.append(el('li', { class: 'hint', text: 'No message yet: write as the contact below.' }));
	if (atBottom) list.scrollTop = list.scrollHeight;
}

function deliveryResult(d) {
	if (d.delivered) return `HTTP ${d.status} in ${d.duration_ms} ms`;
	return d.duration_ms === null ? d.reason : `${d.reason} (${d.duration_ms} ms)`;
}

function renderDeliveries() {
	const rows = [...state.deliveries].reverse().map((d) =>
		el(
			'tr',
			{ class: `delivery${d.resend_of ? ' resent' : ''}`, 'data-id': d.id, 'data-delivered': String(d.delivered), title: d.body ?? '' },
			el('td', { text: time(d.created_at) }),
			el('td', { class: 'event', text: d.event }),
			el('td', { class: `result ${d.delivered ? 'ok' : 'failed'}`, text: deliveryResult(d) }),
			el('td', { class: 'answer', title: d.answer ?? '', text: d.answer ?? '' }),
			el('td', {}, el('button', { type: 'button', class: 'resend', title: 'Post this event again (fresh timestamp, current secret)', text: 'Resend', onclick: (event) => resend(d.id, event.target) })),
		),
	);
	$('deliveries').replaceChildren(...rows);
	if (rows.length === 0) $('deliveries').append(el('tr', {}, el('td', { colspan: '5', class: 'hint', text: 'Nothing delivered yet.' })));
}

function renderWebhook() {
	const { webhook } = state;
	const failed = state.deliveries.filter((d) => !d.delivered).length;
	$('webhook').replaceChildren(
		el('dt', { text: 'URL' }),
		el('dd', { class: 'mono', id: 'webhook-url', text: webhook.configured ? webhook.url : 'none registered: events are not delivered' }),
		el('dt', { text: 'Signing secret' }),
		el('dd', { class: 'mono', text: webhook.secret_masked ?? '—' }),
		el('dt', { text: 'Deliveries' }),
		el('dd', { text: `${state.deliveries.length} (${failed} failed)` }),
	);
}

function renderKeys() {
	$('keys').replaceChildren(
		...state.keys.map((key) =>
			el(
				'li',
				{ class: key.revoked ? 'revoked' : '', 'data-key-id': key.id },
				el('span', { class: 'mono', text: `${key.id} ${key.masked}` }),
				el('div', { class: 'hint', text: `${key.scopes.length === 6 ? 'all scopes' : key.scopes.join(', ') || 'no scope'}; ${key.allowed_numbers ? `numbers ${key.allowed_numbers.join(', ')}` : 'all numbers'}${key.revoked ? '; revoked' : ''}` }),
			),
		),
	);
}

function render() {
	if (!state) return;
	const entries = timeline();
	$('summary').textContent = `account ${state.account_id} · ${state.credit_balance} credits · clock ${state.now.slice(0, 19).replace('T', ' ')} UTC`;
	renderConversations(conversations(entries));
	renderChat(entries);
	renderDeliveries();
	renderWebhook();
	renderKeys();
}

function open(conversation) {
	current = { ...conversation };
	$('contact-name').value = conversation.name || '';
	$('send-result').textContent = '';
	location.hash = `${conversation.number}/${encodeURIComponent(conversation.contact)}`;
	render();
}

async function control(method, path, body) {
	const response = await fetch(`/_sandbox${path}`, {
		method,
		headers: body === undefined ? {} : { 'content-type': 'application/json' },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await response.text();
	const json = text ? JSON.parse(text) : {};
	if (!response.ok) throw new Error(json.error?.message ?? `HTTP ${response.status}`);
	return json;
}

function showOutcome(what, delivery) {
	const out = $('send-result');
	out.dataset.ok = String(delivery.delivered);
	out.textContent = delivery.delivered
		? `${what}: delivered to the webhook, HTTP ${delivery.status} in ${delivery.duration_ms} ms`
		: `${what}: NOT delivered: ${delivery.reason}`;
}

function showError(what, error) {
	const out = $('send-result');
	out.dataset.ok = 'false';
	out.textContent = `${what} failed: ${error.message}`;
}

function readBase64(file) {
	return new Promise((resolve, reject) => {
		const reader = new FileReader();
		reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''));
		reader.onerror = () => reject(reader.error);
		reader.readAsDataURL(file);
	});
}

async function send(event) {
	event.preventDefault();
	if (!current) return;
	const as = document.querySelector('input[name="as"]:checked').value;
	const text = $('text').value;
	const file = $('file').files[0];
	const button = $('send');
	button.disabled = true;
	$('send-result').dataset.ok = '';
	$('send-result').textContent = 'Sending…';
	try {
		let result;
		if (as === 'contact') {
			const name = $('contact-name').value || current.name || '';
			const body = { from: current.contact, contact_name: name, number: current.number, text };
			if (file) body.media = { mime: file.type || 'application/octet-stream', data_base64: await readBase64(file), filename: file.name };
			result = await control('POST', '/inbound', body);
			current.name = name;
			showOutcome('message.inbound', result.delivery);
		} else {
			const body = { to: current.contact, number: current.number, text };
			if (file) body.media_mime = file.type || 'application/octet-stream';
			result = await control('POST', '/echo', body);
			showOutcome('message.echo', result.delivery);
		}
		$('text').value = '';
		$('file').value = '';
	} catch (error) {
		showError('Sending', error);
	} finally {
		button.disabled = false;
		$('text').focus();
	}
}

async function setStatus(id, status) {
	try {
		const result = await control('POST', '/status', { id, status });
		showOutcome(`message.status "${status}"`, result.delivery);
	} catch (error) {
		showError('Setting the status', error);
	}
}

async function resend(id, button) {
	button.disabled = true;
	try {
		const { delivery } = await control('POST', `/deliveries/${encodeURIComponent(id)}/resend`);
		showOutcome(`${delivery.event} resent`, delivery);
	} catch (error) {
		showError('Resending', error);
	} finally {
		button.disabled = false;
	}
}

function connect() {
	const events = new EventSource('/_sandbox/events');
	const indicator = $('connection');
	events.addEventListener('state', (event) => {
		state = JSON.parse(event.data);
		indicator.dataset.state = 'live';
		indicator.textContent = 'live';
		if (!current && location.hash.length > 1) {
			const [number, contact] = location.hash.slice(1).split('/');
			if (number && contact) current = { number, contact: decodeURIComponent(contact), name: '' };
		}
		render();
	});
	// EventSource reconnects by itself (a restarted sandbox is picked up again).
	events.addEventListener('error', () => {
		indicator.dataset.state = 'lost';
		indicator.textContent = 'reconnecting…';
	});
}

document.addEventListener('DOMContentLoaded', () => {
	$('composer').addEventListener('submit', send);
	$('new-conversation').addEventListener('submit', (event) => {
		event.preventDefault();
		const conversation = { number: $('new-number').value, contact: $('new-contact').value.trim(), name: $('new-name').value.trim() };
		if (!drafts.some((d) => sameConversation(d, conversation))) drafts.push(conversation);
		$('new-contact').value = '';
		$('new-name').value = '';
		open(conversation);
	});
	connect();
});
