/* Zocrates sidebar pane in a Zotero main window: a splitter and an iframe of
   chrome://zocrates/content/sidebar.html beside the item pane, a Tools menu item and a
   toolbar button that toggle it. mount() returns the undo that removes all of it. */
/* global Zotero */
/* exported ZocratesPane */
var ZocratesPane = (function () {
  const SIDEBAR_URL = "chrome://zocrates/content/sidebar.html";

  function mount(win, prefs) {
    const doc = win.document;
    const undo = [];
    const itemPane = doc.getElementById("zotero-item-pane");
    const host = itemPane?.parentNode;
    if (!host) {
      Zotero.debug("Zocrates: no #zotero-item-pane in this window; sidebar not mounted");
      return () => {};
    }

    const splitter = doc.createXULElement("splitter");
    splitter.id = "zocrates-splitter";
    splitter.setAttribute("resizebefore", "closest");
    splitter.setAttribute("resizeafter", "closest");
    splitter.setAttribute("collapse", "after");
    const box = doc.createXULElement("vbox");
    box.id = "zocrates-pane";
    box.setAttribute("width", String(prefs.get("sidebarWidth")));
    box.style.minWidth = "300px";
    const frame = doc.createElementNS("http://www.w3.org/1999/xhtml", "iframe");
    frame.id = "zocrates-sidebar-frame";
    frame.setAttribute("src", SIDEBAR_URL);
    frame.style.cssText = "border:0;width:100%;height:100%;flex:1;";
    box.appendChild(frame);
    itemPane.after(splitter, box);
    undo.push(() => {
      splitter.remove();
      box.remove();
    });

    const setOpen = (open) => {
      box.hidden = !open;
      splitter.hidden = !open;
      prefs.set("sidebarOpen", open);
      button?.setAttribute("checked", String(open));
      menuItem.setAttribute("checked", String(open));
    };
    const toggle = () => setOpen(box.hidden);

    const resize = new win.ResizeObserver(() => {
      if (!box.hidden && box.clientWidth > 0) prefs.set("sidebarWidth", box.clientWidth);
    });
    resize.observe(box);
    undo.push(() => resize.disconnect());

    const menuItem = doc.createXULElement("menuitem");
    menuItem.id = "zocrates-toggle-menuitem";
    menuItem.setAttribute("label", "Zocrates Sidebar");
    menuItem.setAttribute("type", "checkbox");
    menuItem.addEventListener("command", toggle);
    doc.getElementById("menu_ToolsPopup")?.appendChild(menuItem);
    undo.push(() => menuItem.remove());

    let button = null;
    const toolbar = doc.getElementById("zotero-tabs-toolbar") || doc.getElementById("zotero-items-toolbar");
    if (toolbar) {
      button = doc.createXULElement("toolbarbutton");
      button.id = "zocrates-toggle-button";
      button.setAttribute("tooltiptext", "Zocrates sidebar");
      button.setAttribute("label", "Zocrates");
      button.setAttribute("type", "checkbox");
      button.setAttribute("image", "chrome://zocrates/content/icons/zocrates.svg");
      button.addEventListener("command", toggle);
      toolbar.appendChild(button);
      undo.push(() => button.remove());
    }

    setOpen(Boolean(prefs.get("sidebarOpen")));
    return () => {
      while (undo.length) {
        try {
          undo.pop()();
        } catch (exc) {
          Zotero.logError(exc);
        }
      }
    };
  }

  return { mount, SIDEBAR_URL };
})();
