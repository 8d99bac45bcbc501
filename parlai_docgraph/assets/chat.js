// The web chat page's script (parlai-docgraph chat), served as /chat.js: the server's
// Content-Security-Policy runs no inline script of the page. The graph of each turn is shown
// in a sandboxed <iframe srcdoc> (scripts only: no access to this page or its session).
let session = null;
const $ = (id) => document.getElementById(id);
function line(cls, text) {
  const d = document.createElement("div"); d.className = cls; d.textContent = text;
  $("log").appendChild(d); $("log").scrollTop = $("log").scrollHeight;
  return d;
}
async function call(path, body) {
  try {
    const r = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"},
                                 body: JSON.stringify(body || {})});
    const data = await r.json();
    if (!r.ok) { line("error", data.error || ("error " + r.status)); return null; }
    return data;
  } catch (e) { line("error", "the server did not answer: " + e); return null; }
}
// One turn: the server streams NDJSON events (selection, token..., done | error).
async function turn(text) {
  let r;
  try {
    r = await fetch("/api/chat", {method: "POST", headers: {"Content-Type": "application/json"},
                                  body: JSON.stringify({session, text})});
  } catch (e) { line("error", "the server did not answer: " + e); return; }
  if (!r.ok) {
    let msg = "error " + r.status;
    try { msg = (await r.json()).error || msg; } catch (e) {}
    line("error", msg); return;
  }
  const reader = r.body.getReader(), decoder = new TextDecoder();
  let buffer = "", bot = null, streamed = "";
  const handle = (ev) => {
    if (ev.event === "selection") {
      $("sentence").textContent = ev.selected_sentence;
      $("concepts").textContent = (ev.top_concepts || []).join(", ") || "-";
    } else if (ev.event === "token") {
      if (!bot) { bot = line("bot partial", ""); bot.dataset.tokens = 0; }
      streamed += ev.text; bot.textContent = "docgraph: " + streamed;
      bot.dataset.tokens = Number(bot.dataset.tokens) + 1;
      $("log").scrollTop = $("log").scrollHeight;
    } else if (ev.event === "done") {
      if (ev.note) line("note", ev.note);
      if (ev.answer_dropped) {  // the answer check replaced the streamed reply
        line("note", "the generated reply left out " + ev.answer_dropped.join(", ") +
             " of the selected sentence, so the reply is that sentence");
      }
      if (ev.text) {
        if (!bot) bot = line("bot", "");
        bot.textContent = "docgraph: " + ev.text; bot.className = "bot";
      } else if (bot) { bot.remove(); }
      if (ev.selected_sentence) {
        $("sentence").textContent = ev.selected_sentence;
        $("concepts").textContent = (ev.top_concepts || []).join(", ") || "-";
      }
      if (ev.graph_html) $("graph").srcdoc = ev.graph_html;
    } else if (ev.event === "error") {
      if (bot) bot.className = "bot";
      line("error", ev.error);
    }
  };
  try {
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const text = buffer.slice(0, nl); buffer = buffer.slice(nl + 1);
        if (text.trim()) handle(JSON.parse(text));
      }
    }
  } catch (e) { line("error", "the reply was cut off: " + e); }
}
function notes(data) { (data.notes || []).forEach((n) => line("note", n)); }
function docs(data) { if (data.documents && data.documents.length) $("docs").textContent = data.documents.join(", "); }
async function start() {
  const data = await call("/api/session");
  if (data) { session = data.session; notes(data); docs(data); }
}
async function addDoc(name, text) {
  const data = await call("/api/documents", {session, name, text});
  if (data) { notes(data); docs(data); }
}
$("upload").onclick = () => {
  const f = $("file").files[0];
  if (!f) { line("error", "choose a file first"); return; }
  const reader = new FileReader();
  reader.onload = () => addDoc(f.name, reader.result);
  reader.readAsText(f);
};
$("adddoc").onclick = () => addDoc($("docname").value || "pasted.md", $("doctext").value);
$("form").onsubmit = async (ev) => {
  ev.preventDefault();
  const text = $("msg").value; $("msg").value = "";
  line("user", "you: " + text);
  await turn(text);
};
start();
