// A tolerant reader of the start of a JSON text: a tool call's arguments while they stream in
// (each `tool_call_delta` adds a piece, docs/protocol.md). It gives the value the text so far
// stands for, so the card can show key → value fields long before the closing brace arrives.
// The grammar is RFC 8259's (https://www.rfc-editor.org/rfc/rfc8259); the only tolerance is
// for an end that has not arrived yet. No DOM and no gettext here: node can import it.

const WHITESPACE = new Set([" ", "\t", "\n", "\r"]);
const ESCAPES = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
const LITERALS = { true: true, false: false, null: null };
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/;
// What a valid number can start with: "-", "1.", "1.5e", "1e+" (RFC 8259, section 6).
const NUMBER_START = /^-?(0|[1-9]\d*)?$|^-?(0|[1-9]\d*)(\.\d*|\.\d+[eE][+-]?\d*|[eE][+-]?\d*)$/;
// The start of the "\uXXXX" that may follow a high surrogate (RFC 8259, section 7).
const LOW_HALF_START = /^(\\(u[0-9a-fA-F]{0,3})?)?$/;
const INCOMPLETE = Symbol("incomplete"); // a value whose first characters are not enough

function isHighSurrogate(code) {
  return code >= 0xd800 && code <= 0xdbff;
}

class Reader {
  constructor(text) {
    this.text = text;
    this.at = 0;
  }

  get ended() {
    return this.at >= this.text.length;
  }

  skipSpace() {
    while (!this.ended && WHITESPACE.has(this.text[this.at])) this.at += 1;
  }

  fail(code) {
    // The error names the rule broken (a code, not prose: the page words it) and where.
    const error = new SyntaxError(code);
    error.position = this.at;
    throw error;
  }

  value() {
    // The value starting here, INCOMPLETE when the text ends before anything can be shown.
    this.skipSpace();
    if (this.ended) return INCOMPLETE;
    const char = this.text[this.at];
    if (char === "{") return this.object();
    if (char === "[") return this.array();
    if (char === '"') return this.string();
    if (char === "-" || (char >= "0" && char <= "9")) return this.number();
    return this.literal();
  }

  object() {
    // Members in order; a key whose value has not started yet is left out until it has.
    const out = {};
    this.at += 1;
    for (let first = true; ; first = false) {
      this.skipSpace();
      if (this.ended) return out;
      if (this.text[this.at] === "}") {
        this.at += 1;
        return out;
      }
      if (!first) this.expect(",", "expected_comma");
      this.skipSpace();
      if (this.ended) return out;
      if (this.text[this.at] !== '"') this.fail("expected_key");
      const key = this.string();
      if (this.open) return out; // the key itself is still arriving
      this.skipSpace();
      if (this.ended) return out;
      this.expect(":", "expected_colon");
      const value = this.value();
      if (value !== INCOMPLETE) out[key] = value;
      if (this.ended) return out;
    }
  }

  array() {
    const out = [];
    this.at += 1;
    for (let first = true; ; first = false) {
      this.skipSpace();
      if (this.ended) return out;
      if (this.text[this.at] === "]") {
        this.at += 1;
        return out;
      }
      if (!first) this.expect(",", "expected_comma");
      const value = this.value();
      if (value !== INCOMPLETE) out.push(value);
      if (this.ended) return out;
    }
  }

  expect(char, code) {
    if (this.text[this.at] !== char) this.fail(code);
    this.at += 1;
  }

  string() {
    // The characters so far; `this.open` says whether the closing quote has arrived. A
    // half-arrived escape (a lone "\" or "\u00", or the first half of a surrogate pair at the
    // end) is left out until it is whole.
    let out = "";
    this.at += 1;
    this.open = true;
    while (!this.ended) {
      const char = this.text[this.at];
      if (char === '"') {
        this.at += 1;
        this.open = false;
        return out;
      }
      if (char < " ") this.fail("control_character");
      if (char !== "\\") {
        out += char;
        this.at += 1;
        continue;
      }
      const escape = this.text[this.at + 1];
      if (escape === undefined) break;
      if (escape === "u") {
        const hex = this.text.slice(this.at + 2, this.at + 6);
        if (!/^[0-9a-fA-F]*$/.test(hex)) this.fail("bad_escape");
        const code = parseInt(hex, 16);
        if (hex.length < 4 || (isHighSurrogate(code) && LOW_HALF_START.test(this.text.slice(this.at + 6)))) {
          break; // an emoji's second half may be next: shown together
        }
        out += String.fromCharCode(code);
        this.at += 6;
      } else if (escape in ESCAPES) {
        out += ESCAPES[escape];
        this.at += 2;
      } else {
        this.fail("bad_escape");
      }
    }
    this.at = this.text.length;
    return out;
  }

  number() {
    // A number running to the end of the text may be still arriving: "12" of "12.5" shows 12,
    // "-" or "1e" (a start no digit has made a number of yet) is left out for now.
    const run = /^[-+.eE\d]*/.exec(this.text.slice(this.at))[0];
    const found = NUMBER.exec(run);
    if (this.at + run.length === this.text.length && NUMBER_START.test(run)) {
      this.at += run.length;
      return found ? Number(found[0]) : INCOMPLETE;
    }
    if (!found || found[0] !== run) this.fail("bad_number");
    this.at += run.length;
    return Number(run);
  }

  literal() {
    const rest = this.text.slice(this.at);
    for (const [word, value] of Object.entries(LITERALS)) {
      if (rest.startsWith(word)) {
        this.at += word.length;
        return value;
      }
      if (word.startsWith(rest)) {
        this.at = this.text.length; // "tr" of "true": shown once it is whole
        return INCOMPLETE;
      }
    }
    return this.fail("unexpected_character");
  }
}

/**
 * The value the start of a JSON text stands for.
 *
 * `text`: the characters received so far (a string). Returns `{value, complete}`: `value` is
 * what has arrived (objects keep only keys whose value has begun; strings, arrays and numbers
 * their part so far; a literal is `undefined` until whole) and `complete` is true once the
 * text is a whole JSON value. `{value: undefined, complete: false}` for "" or only spaces.
 * Throws SyntaxError for text no continuation can make valid JSON: its message is the rule
 * broken (`expected_key`, `expected_colon`, `expected_comma`, `bad_escape`, `bad_number`,
 * `control_character`, `unexpected_character`, `text_after_value`) and its `position` the
 * index of the first character that breaks it.
 */
export function parsePartialJson(text) {
  const reader = new Reader(String(text));
  const value = reader.value();
  reader.skipSpace();
  if (!reader.ended) reader.fail("text_after_value");
  if (value === INCOMPLETE) return { value: undefined, complete: false };
  let complete;
  try {
    JSON.parse(reader.text);
    complete = true;
  } catch {
    complete = false;
  }
  return { value, complete };
}
