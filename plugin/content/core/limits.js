// Generated from libs/contracts by `make schemas` (tools/pluginlimits.py): do not edit.
// The server's limits the plugin must respect; tests/ui/test_plugin_limits.py fails when
// this file and the contracts drift apart.

/** Items in one sync page (LibrarySyncRequested.items). */
export const MAX_SYNC_ITEMS = 500;
/** Deleted keys in one sync page (LibrarySyncRequested.deleted). */
export const MAX_SYNC_DELETED = 5000;
/** The largest sync request body the gateway reads (MAX_SYNC_BODY). */
export const MAX_SYNC_BODY_BYTES = 786432;
/** Attachment content types that are indexed; others are refused (UPLOAD_TYPES). */
export const UPLOAD_TYPES = Object.freeze(["application/epub+zip", "application/pdf", "application/xhtml+xml", "text/html", "text/markdown", "text/plain", "text/x-markdown"]);
/** Ids: sync, session and turn ids (ID_PATTERN). */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** A Zotero item key (SyncedItem.key). */
export const ITEM_KEY_PATTERN = /^[A-Z0-9]{8}$/;
/** A Zotero item type (SyncedItem.item_type). */
export const ITEM_TYPE_PATTERN = /^[A-Za-z]{1,64}$/;
/** A content type (SyncedItem.content_type, AttachmentUploaded.content_type). */
export const CONTENT_TYPE_PATTERN = /^[a-z0-9.+-]+\/[a-z0-9.+-]+$/;
/** A file's SHA-256, lower-case hex (SyncedItem.sha256). */
export const SHA256_PATTERN = /^[0-9a-f]{64}$/;
/** SyncedItem: the longest value of each text field, the most creators, collections and tags, the longest tag. */
export const SYNCED_ITEM_MAX = Object.freeze({ title: 2000, date: 100, publication: 2000, doi: 256, url: 2048, extra: 10000, content_type: 255, filename: 255, note: 32000, abstract: 10000, creators: 100, collections: 100, tags: 200, tag: 255 });
/** Collections of one library's tree in a sync page (LibrarySyncRequested.collections). */
export const MAX_SYNC_COLLECTIONS = 2000;
/** Items a question's scope may name (ItemsScope.items). */
export const MAX_SCOPE_ITEMS = 1000;
/** The longest name of a question's scope kept with its turn (TurnRecord.scope_label). */
export const MAX_SCOPE_LABEL_CHARS = 300;
