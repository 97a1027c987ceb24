"""Discovery's edges: the scholarly APIs over HTTP, the local Zotero database, the hosted library catalog."""
