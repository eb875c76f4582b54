// linewatch web: live overview (server-sent events) and the inbox's keyboard shortcuts. No dependencies.
"use strict";

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmt(x) { return (typeof x === "number") ? x.toFixed(2) : "-"; }

function alertCell(td, a) {
  td.textContent = "";
  if (!a) { td.appendChild(el("span", { class: "ok-text" }, "no open alert")); return; }
  td.appendChild(el("a", { class: "badge prio-" + a.priority, href: "/alerts#alert-" + a.alert_id },
    a.priority.toUpperCase() + " · " + a.state.replace(/_/g, " ")));
  td.appendChild(el("span", { class: "sub" }, a.label + " (" + a.alert_id + ")"));
}

function verdictCells(tr, v) {
  const vc = tr.querySelector("td.verdict");
  vc.textContent = "";
  vc.appendChild(el("span", { class: "label " + (v.label !== "normal" ? "fault" : "normal") }, v.label));
  vc.appendChild(el("span", { class: "sub" }, v.state + (v.missing && v.missing.length ? ", missing " + v.missing.join(", ") : "")));
  tr.querySelector("td.severity").textContent = fmt(v.severity);
  tr.querySelector("td.confidence").textContent = fmt(v.confidence);
}

function rowFor(asset) {
  let tr = document.getElementById("asset-" + asset);
  if (tr) return tr;
  const tbody = document.querySelector("#overview tbody");
  const empty = tbody.querySelector("tr.empty");
  if (empty) empty.remove();
  tr = el("tr", { id: "asset-" + asset, "data-asset": asset });
  const th = el("th", { scope: "row" });
  th.appendChild(el("a", { href: "/assets/" + encodeURIComponent(asset) }, asset));
  tr.appendChild(th);
  for (const [cls, label] of [["verdict", "Verdict"], ["severity", "Severity"], ["confidence", "Confidence"], ["alert", "Open alert"]]) {
    const td = el("td", { class: cls, "data-label": label }, "-");
    tr.appendChild(td);
  }
  alertCell(tr.querySelector("td.alert"), null);
  const rows = Array.from(tbody.querySelectorAll("tr[data-asset]"));
  const after = rows.find(r => r.dataset.asset > asset);
  tbody.insertBefore(tr, after || null);
  return tr;
}

function flash(tr) { tr.classList.remove("flash"); void tr.offsetWidth; tr.classList.add("flash"); }

function resync() {
  return fetch("/api/v1/overview", { credentials: "same-origin" }).then(r => r.ok ? r.json() : []).then(rows => {
    for (const row of rows) {
      const tr = rowFor(row.asset_id);
      if (row.verdict) verdictCells(tr, row.verdict);
      alertCell(tr.querySelector("td.alert"), row.alert);
    }
  });
}

function connect(onEvent, status) {
  const es = new EventSource("/api/v1/events");
  es.addEventListener("open", () => { if (status) status.textContent = "Live: updates arrive as they happen."; onEvent("open", null); });
  es.addEventListener("error", () => { if (status) status.textContent = "Live updates interrupted: reconnecting…"; });
  for (const kind of ["verdict", "alert", "explanation", "drift"]) {
    es.addEventListener(kind, ev => onEvent(kind, JSON.parse(ev.data)));
  }
  return es;
}

function overview() {
  const status = document.getElementById("live-status");
  connect((kind, ev) => {
    if (kind === "open") { resync(); return; }
    if (kind === "verdict") { const tr = rowFor(ev.data.asset_id); verdictCells(tr, ev.data); }
    if (kind === "alert") {
      const tr = rowFor(ev.data.asset_id);
      alertCell(tr.querySelector("td.alert"), ev.data.asset_alert);
      tr.dataset.alertSentMs = String(ev.sent_ms);
      flash(tr);
    }
  }, status);
}

function inbox() {
  const status = document.getElementById("live-status");
  const list = document.getElementById("inbox-list");
  let pending = false;
  // Where the keyboard focus is, so that a live re-render can put it back on the same control.
  function focusKey(elem) {
    const card = elem.closest ? elem.closest("article.alert-card") : null;
    if (!card) return null;
    if (elem === card) return "#" + card.id;
    const form = elem.closest("form");
    if (form && elem.tagName === "BUTTON") return "#" + card.id + ' form[action="' + form.getAttribute("action") + '"] button';
    if (elem.tagName === "A") return "#" + card.id + ' a[href="' + elem.getAttribute("href") + '"]';
    if (elem.tagName === "SUMMARY") return "#" + card.id + " details.more > summary";
    return "#" + card.id;
  }
  function refresh() {
    const active = document.activeElement;
    const typing = list.contains(active) && (active instanceof HTMLInputElement || active instanceof HTMLSelectElement
      || active instanceof HTMLTextAreaElement || (active.closest && active.closest("details[open]")));
    if (typing) {  // never yank a half-filled form away: say so, r refreshes
      if (!pending) { status.textContent = "New alert events: press r (outside a form) to refresh."; }
      pending = true;
      return;
    }
    pending = false;
    const key = list.contains(active) ? focusKey(active) : null;
    fetch("/alerts?partial=1", { credentials: "same-origin" }).then(r => r.text()).then(html => {
      list.innerHTML = html;
      if (key) { const again = list.querySelector(key); if (again) again.focus({ preventScroll: true }); }
      status.textContent = "Inbox updated " + new Date().toLocaleTimeString() + ".";
    });
  }
  connect((kind) => { if (kind === "alert" || kind === "explanation") refresh(); }, null);
  document.addEventListener("keydown", ev => {
    const t = ev.target;
    if (t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLTextAreaElement) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const cards = Array.from(list.querySelectorAll("article.alert-card"));
    const current = t.closest ? t.closest("article.alert-card") : null;
    const i = current ? cards.indexOf(current) : -1;
    if (ev.key === "j" && cards.length) { cards[Math.min(i + 1, cards.length - 1)].focus(); ev.preventDefault(); }
    else if (ev.key === "k" && cards.length) { cards[Math.max(i - 1, 0)].focus(); ev.preventDefault(); }
    else if (ev.key === "a" && current) {
      const ack = current.querySelector("button.ack");
      if (ack) { ack.click(); ev.preventDefault(); }
    }
    else if (ev.key === "r") { pending = false; refresh(); ev.preventDefault(); }
    else if (ev.key === "Escape" && current) { current.blur(); if (pending) refresh(); }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const page = document.body.dataset.page;
  if (page === "overview") overview();
  if (page === "inbox") inbox();
});
