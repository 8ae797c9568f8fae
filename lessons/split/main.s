; split: two scrolls on one screen.
;
; The top four rows are a status bar that stays put; the rest scrolls
; sideways. NMI sets the bar's scroll (scroll-writer). The main loop then
; polls PPUSTATUS bit 6, the sprite-0 hit flag, which the PPU sets when the
; first opaque pixel of sprite 0 meets an opaque background pixel: sprite 0
; sits on the bar's bottom row, hidden behind it. From then on, a new X
; scroll and nametable bit take effect on the next line (sprite-0-split).

PPUCTRL   = $2000
PPUMASK   = $2001
PPUSTATUS = $2002
OAMADDR   = $2003
PPUSCROLL = $2005
PPUADDR   = $2006
PPUDATA   = $2007
OAMDMA    = $4014

.segment "HEADER"
    .byte "NES", $1A, 1, 1  ; 16K PRG, 8K CHR
    .byte $01, $00          ; mapper 0 (NROM), vertical mirroring
    .res 8, 0

.zeropage
frame:     .res 1
scroll_x:  .res 1           ; the playfield's scroll, 9 bits in all
scroll_nt: .res 1

.segment "OAM"
oam: .res 256               ; shadow OAM: 64 sprites of 4 bytes

.code
reset:
    sei
    cld
    ldx #$FF
    txs
    inx
    stx PPUCTRL
    stx PPUMASK
    stx $4010
    bit PPUSTATUS
@vblank1:
    bit PPUSTATUS
    bpl @vblank1
@clear:
    lda #0
    sta $00,x
    lda #$FF                ; Y = $FF puts a sprite below the screen
    sta oam,x
    inx
    bne @clear
@vblank2:
    bit PPUSTATUS
    bpl @vblank2

    ldx #3                  ; sprite 0: y, tile, attributes, x
@sprite0:
    lda sprite0,x
    sta oam,x
    dex
    bpl @sprite0
    lda #$3F
    sta PPUADDR
    ldx #0
    stx PPUADDR
@palette:
    lda palette,x
    sta PPUDATA
    inx
    cpx #32
    bne @palette
    lda #$20                ; both nametables: vertical mirroring shows
    jsr fill_nametable      ; $2000 and $2400 side by side
    lda #$24
    jsr fill_nametable

    lda #%10000000          ; NMI on
    sta PPUCTRL
    lda #%00011110          ; background and sprites, left column too
    sta PPUMASK

main_loop:
    lda frame               ; wait for NMI: the bar's scroll is set
@frame:
    cmp frame
    beq @frame
@hit_clear:                 ; last frame's hit clears at the end of vblank
    bit PPUSTATUS
    bvs @hit_clear
@hit:                       ; and sets again on sprite 0's first line
    bit PPUSTATUS           ; (this read also resets the PPUSCROLL latch)
    bvc @hit
    lda scroll_nt           ; mid-screen only X and its nametable bit count
    ora #%10000000
    sta PPUCTRL
    lda scroll_x
    sta PPUSCROLL
    sta PPUSCROLL           ; the Y byte is ignored until the next frame
    inc scroll_x            ; the playfield moves one pixel a frame
    bne main_loop
    lda scroll_nt
    eor #1
    sta scroll_nt
    jmp main_loop

; fill_nametable: A = high byte of its address. One tile per row, from
; `rows`, then attributes of 0.
fill_nametable:
    sta PPUADDR
    lda #0
    sta PPUADDR
    ldy #0
@row:
    lda rows,y
    ldx #32
@tile:
    sta PPUDATA
    dex
    bne @tile
    iny
    cpy #30
    bne @row
    lda #0
    ldx #64
@attribute:
    sta PPUDATA
    dex
    bne @attribute
    rts

nmi:
    pha
    lda #0                  ; the sprites, from the shadow page
    sta OAMADDR
    lda #>oam
    sta OAMDMA
    lda #%10000000          ; scroll-writer: the bar at 0, 0, nametable 0
    sta PPUCTRL
    lda #0
    sta PPUSCROLL
    sta PPUSCROLL
    inc frame
    pla
irq:
    rti

.rodata
sprite0:
    .byte 23, 1, %00100000, 128 ; lines 24..31, tile 1, behind the bar
rows:
    .byte 0, 0, 0, 1        ; the bar: its bottom row solid
    .res 26, 2              ; the playfield: diagonal stripes
palette:
    .byte $0F, $00, $10, $30, $0F, $00, $10, $30
    .byte $0F, $00, $10, $30, $0F, $00, $10, $30
    .byte $0F, $16, $27, $30, $0F, $16, $27, $30
    .byte $0F, $16, $27, $30, $0F, $16, $27, $30

.segment "CHARS"
    .res 16, $00                                    ; tile 0: empty
    .res 8, $FF                                     ; tile 1: solid colour 1
    .res 8, $00
    .byte $81, $C0, $60, $30, $18, $0C, $06, $03    ; tile 2: a stripe
    .res 8, $00

.segment "VECTORS"
    .word nmi, reset, irq
