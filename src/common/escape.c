/*
 * Escapers for every language mrc writes names into: JSON, Graphviz DOT,
 * XML (SVG and Graphviz's HTML-like labels) and gnuplot. Names reach them
 * from topology files, command lines and the C API, so nothing about their
 * bytes is trusted.
 *
 * One rule for bytes that are not valid UTF-8 (stray continuation bytes,
 * overlong forms, surrogates, code points past U+10FFFF, a sequence cut
 * short): each such byte becomes U+FFFD, the replacement character, in
 * every language. Replacing rather than refusing keeps a writer infallible
 * (a topology made through the C API can always be drawn or saved), and the
 * readers refuse such names anyway, so nothing that reads back silently
 * changes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD in UTF-8 */

/* Length of the valid UTF-8 sequence at p (1 to 4), or 0 if the byte at p
 * does not start one. Follows RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
        unsigned char hi = c == 0xED ? 0x9F : 0xBF;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
        unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 &&
                       (p[3] & 0xC0) == 0x80
                   ? 4
                   : 0;
    }
    return 0;
}

int mrc__utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = utf8_len(p);
        if (n == 0)
            return 0;
        p += n;
    }
    return 1;
}

int mrc__has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7F)
            return 1;
    return 0;
}

/* The escapers walk the string once: ASCII bytes go to `ascii`, which
 * appends their escaped form; valid multi-byte sequences are copied; each
 * invalid byte becomes U+FFFD. */
typedef void (*ascii_fn)(mrc__strbuf_t *sb, unsigned char c);

static void escape_with(mrc__strbuf_t *sb, const char *s, ascii_fn ascii)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        size_t n = utf8_len(p);
        if (n == 1)
            ascii(sb, *p);
        else if (n > 1)
            mrc__sb_append(sb, (const char *)p, n);
        else
            mrc__sb_puts(sb, REPLACEMENT);
        p += n ? n : 1;
    }
}

static void json_ascii(mrc__strbuf_t *sb, unsigned char c)
{
    if (c == '"' || c == '\\') {
        char esc[2] = {'\\', (char)c};
        mrc__sb_append(sb, esc, 2);
    } else if (c < 0x20 || c == 0x7F) {
        mrc__sb_printf(sb, "\\u%04x", c);
    } else {
        mrc__sb_append(sb, (const char *)&c, 1);
    }
}

void mrc__sb_json_string(mrc__strbuf_t *sb, const char *s)
{
    mrc__sb_append(sb, "\"", 1);
    escape_with(sb, s, json_ascii);
    mrc__sb_append(sb, "\"", 1);
}

/* DOT: a double-quoted ID in which only \" is an escape of the language;
 * the rest of the backslashes are Graphviz's label escapes (\N, \G, \l),
 * so a literal backslash is doubled, and Graphviz decodes HTML entities
 * (&amp;) in every string, so & is written &amp;. A newline becomes \n (a
 * line break in a label); other control characters, which Graphviz would
 * copy into its SVG where XML forbids them, become U+FFFD. */
static void dot_ascii(mrc__strbuf_t *sb, unsigned char c)
{
    if (c == '&') {
        mrc__sb_puts(sb, "&amp;");
    } else if (c == '"' || c == '\\') {
        char esc[2] = {'\\', (char)c};
        mrc__sb_append(sb, esc, 2);
    } else if (c == '\n') {
        mrc__sb_append(sb, "\\n", 2);
    } else if (c < 0x20 || c == 0x7F) {
        mrc__sb_puts(sb, REPLACEMENT);
    } else {
        mrc__sb_append(sb, (const char *)&c, 1);
    }
}

void mrc__sb_dot_string(mrc__strbuf_t *sb, const char *s)
{
    mrc__sb_append(sb, "\"", 1);
    escape_with(sb, s, dot_ascii);
    mrc__sb_append(sb, "\"", 1);
}

/* XML 1.0 has no way to write most control characters, not even as
 * character references: they become U+FFFD, tab, newline and CR stay. */
static void xml_ascii(mrc__strbuf_t *sb, unsigned char c)
{
    switch (c) {
    case '&': mrc__sb_puts(sb, "&amp;"); break;
    case '<': mrc__sb_puts(sb, "&lt;"); break;
    case '>': mrc__sb_puts(sb, "&gt;"); break;
    case '"': mrc__sb_puts(sb, "&quot;"); break;
    case '\'': mrc__sb_puts(sb, "&#39;"); break;
    default:
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F)
            mrc__sb_puts(sb, REPLACEMENT);
        else
            mrc__sb_append(sb, (const char *)&c, 1);
    }
}

void mrc__sb_xml_text(mrc__strbuf_t *sb, const char *s)
{
    escape_with(sb, s, xml_ascii);
}

/* gnuplot: a single-quoted string has no escapes but '' for a quote, and
 * a newline would end the command, so every control character (newline
 * included) becomes a space. */
static void gnuplot_ascii(mrc__strbuf_t *sb, unsigned char c)
{
    if (c == '\'')
        mrc__sb_append(sb, "''", 2);
    else if (c < 0x20 || c == 0x7F)
        mrc__sb_append(sb, " ", 1);
    else
        mrc__sb_append(sb, (const char *)&c, 1);
}

void mrc__sb_gnuplot_string(mrc__strbuf_t *sb, const char *s)
{
    mrc__sb_append(sb, "'", 1);
    escape_with(sb, s, gnuplot_ascii);
    mrc__sb_append(sb, "'", 1);
}

char *mrc__json_quote(const char *s)
{
    mrc__strbuf_t sb;
    mrc__sb_init(&sb);
    mrc__sb_json_string(&sb, s);
    return mrc__sb_take(&sb);
}
