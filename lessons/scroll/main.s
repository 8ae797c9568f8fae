; scroll: scrolling sideways without tearing.
;
; The main loop waits for a frame (frame-wait), moves the camera one pixel
; right, and every eighth pixel queues the tiles of the column about to
; come in at the right edge. The NMI handler copies the queue to the PPU
; (vram-drain) and only then writes PPUCTRL and the two PPUSCROLL bytes
; (scroll-writer): writes to PPUADDR move the scroll, so scroll goes last.
; Vertical mirroring puts nametables $2000 and $2400 side by side.

PPUCTRL   = $2000
PPUMASK   = $2001
PPUSTATUS = $2002
PPUSCROLL = $2005
PPUADDR   = $2006
PPUDATA   = $2007

.segment "HEADER"
    .byte "NES", $1A
    .byte 1, 1              ; 16K PRG, 8K CHR
    .byte $01, $00          ; mapper 0 (NROM), vertical mirroring
    .res 8, 0

.zeropage
frame:     .res 1
scroll_x:  .res 1           ; camera x within its nametable
scroll_nt: .res 1           ; which nametable: 0 ($2000) or 1 ($2400)
addr_hi:   .res 1           ; the next queued write's address
addr_lo:   .res 1
queue_len: .res 1           ; bytes used in `queue`, three per write
queue:     .res 3 * 8       ; address high, address low, tile

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
    txa
@clear:
    sta $00,x
    inx
    bne @clear
@vblank2:
    bit PPUSTATUS
    bpl @vblank2

    lda #$3F                ; rendering is off: the PPU is ours for now
    sta PPUADDR
    stx PPUADDR             ; X = 0
@palette:
    lda palette,x
    sta PPUDATA
    inx
    cpx #4
    bne @palette
    lda #$20                ; both nametables to tile 0, attributes to 0
    sta PPUADDR
    ldx #0
    stx PPUADDR
    txa
    ldy #8                  ; 8 pages: $2000-$27FF
@page:
    sta PPUDATA
    inx
    bne @page
    dey
    bne @page

    lda #%10000000          ; NMI on; the first NMI sets the scroll
    sta PPUCTRL
    lda #%00001010
    sta PPUMASK

main_loop:
    lda frame               ; frame-wait: until NMI counts the next frame
@wait:
    cmp frame
    beq @wait
    inc scroll_x            ; one pixel right
    bne @moved
    lda scroll_nt           ; past 255: into the other nametable
    eor #1
    sta scroll_nt
@moved:
    lda scroll_x
    and #7
    bne main_loop           ; a new column every eight pixels
    jsr queue_column
    jmp main_loop

; queue_column: the column at screen x = 256, just off the right edge, is
; the same column of the other nametable. Two tiles: rows 22 and 23.
queue_column:
    lda scroll_nt
    eor #1
    asl a
    asl a                   ; $00 or $04
    ora #$22                ; row 22 starts at $22C0, row 23 at $22E0
    sta addr_hi
    lda scroll_x
    lsr a
    lsr a
    lsr a                   ; column 0..31
    ora #$C0
    sta addr_lo
    and #%00000010          ; blocks two tiles wide, every other pair
    lsr a                   ; tile 1 or none
    jsr push
    lda addr_lo
    ora #$20                ; row 23: $E0 + column
    sta addr_lo
    lda #2                  ; ground all along
; push: append the write (addr_hi, addr_lo) <- A to the queue.
push:
    ldx queue_len
    sta queue+2,x
    lda addr_hi
    sta queue,x
    lda addr_lo
    sta queue+1,x
    txa
    clc
    adc #3
    sta queue_len
    rts

nmi:
    pha
    txa
    pha
    ldx #0                  ; vram-drain: the queue, oldest first
@drain:
    cpx queue_len
    beq @drained
    lda queue,x
    sta PPUADDR
    lda queue+1,x
    sta PPUADDR
    lda queue+2,x
    sta PPUDATA
    inx
    inx
    inx
    bne @drain              ; always
@drained:
    lda #0
    sta queue_len
    lda scroll_nt           ; scroll-writer: last, after every PPUADDR write
    ora #%10000000          ; NMI on, nametable bit = the camera's nametable
    sta PPUCTRL
    lda scroll_x
    sta PPUSCROLL           ; x
    lda #0
    sta PPUSCROLL           ; y
    inc frame
    pla
    tax
    pla
irq:
    rti

.rodata
palette:
    .byte $21, $1A, $17, $27    ; sky, green, brown, tan

.segment "CHARS"
    .res 16, $00                                    ; tile 0: sky
    .byte $00, $7E, $7E, $7E, $7E, $7E, $7E, $00    ; tile 1: a block, plane 0
    .byte $FF, $FF, $FF, $FF, $FF, $FF, $FF, $FF    ;         plane 1
    .byte $FF, $FF, $00, $44, $00, $11, $00, $44    ; tile 2: grass over earth
    .byte $00, $00, $FF, $FF, $FF, $FF, $FF, $FF

.segment "VECTORS"
    .word nmi, reset, irq
